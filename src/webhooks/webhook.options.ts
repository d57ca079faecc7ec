import type { AddressRule } from '../outbound/outbound.address.js';

// What one node's webhook delivery is configured with (WEBHOOK_* in
// src/config.ts), its defaults, and the rule that reads the retry schedule.

export interface DeliveryOptions extends AddressRule {
  /** WEBHOOK_TIMEOUT: one attempt's limit, connect to last byte. */
  timeoutMs: number;
  /** WEBHOOK_RETRY_SCHEDULE: seconds to wait after the 1st, 2nd, ... failure; one more failure disables. */
  retrySchedule: number[];
  /** Endpoints one node delivers to at once. */
  concurrency: number;
  /** How often the worker looks for due retries and expired leases without being woken. */
  pollMs: number;
  /** Idle-cursor catch-up, cursor-expiry check and attempt-log purge. */
  maintenanceMs: number;
}

export const DELIVERY_DEFAULTS: Omit<DeliveryOptions, 'allowed'> = {
  timeoutMs: 10_000,
  retrySchedule: [5, 300, 1800, 7200, 18_000, 36_000, 36_000],
  concurrency: 16,
  pollMs: 1000,
  maintenanceMs: 60_000,
};

/** The variation applied to each retry step. */
const JITTER = 0.2;

/** Rule: the wait after the n-th failure (1-based): the schedule's step ±20%, or the receiver's Retry-After up to that step; undefined when the schedule is spent. */
export function retryDelayMs(schedule: number[], failures: number, retryAfterSeconds?: number): number | undefined {
  const step = schedule[failures - 1];
  if (step === undefined) return undefined;
  // Never sooner than the schedule's first step: "Retry-After: 0" from a restarting proxy must not spend every retry at once.
  if (retryAfterSeconds !== undefined) return Math.max(Math.min(retryAfterSeconds, step), schedule[0]!) * 1000;
  return step * 1000 * (1 - JITTER + Math.random() * 2 * JITTER);
}
