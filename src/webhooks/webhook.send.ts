import type { AddressRule } from '../outbound/outbound.address.js';
import { STATUS_CODES } from 'node:http';
import { LRUCache } from 'lru-cache';
import { outboundRequest, outboundUrl } from '../outbound/outbound.agents.js';
import { signedHeaders } from './webhook.sign.js';
import { toAuditRecord } from '../audit/audit.fields.js';
import type { Row } from 'postgres';

// One delivery attempt: a signed POST, cut off at the timeout, redirects not
// followed, the address rule applied to the socket's own lookup (both from
// the outbound room, src/outbound/, which every outbound call goes through).
// Only the first KB of the answer is kept; the rest is read and dropped so
// the connection can be reused (undici keep-alive agents, one per protocol
// and rule).

/** The stored part of a receiver's answer. */
const RESPONSE_KEPT_BYTES = 1024;

export interface SendOptions extends AddressRule {
  timeoutMs: number;
}

export interface SendResult {
  statusCode: number | null;
  /** Why this is not a success: a non-2xx status, a timeout, a refused address, a network error. null on 2xx. */
  error: string | null;
  ms: number;
  /** The first RESPONSE_KEPT_BYTES of the answer (or the error text when none came). */
  response: string;
  /** Seconds the receiver asked to wait (Retry-After), when it did. */
  retryAfterSeconds?: number;
}

/** The body of one event: exactly these bytes are signed and sent. */
export function eventBody(type: string, time: Date, data: unknown): Buffer {
  return Buffer.from(JSON.stringify({ type, timestamp: time.toISOString(), data }));
}

type DeliveryEvent = { record: ReturnType<typeof toAuditRecord>; eventId: string; body: Buffer };
const RECENT_EVENTS = 4096;

/**
 * The events of the audit records read with recordColumns: each record's
 * webhook-id and body, made once and kept for the next endpoints that
 * receive the same record (a record never changes, and every endpoint gets
 * the same bytes). One per worker, never per process: a record id names a
 * record only within its database, and apps of one process on two databases
 * (the tests' apps) have the same ids for different records.
 */
export class RecentEvents {
  private readonly byId = new LRUCache<string, DeliveryEvent>({ max: RECENT_EVENTS });

  of(row: Row): DeliveryEvent {
    const id = String(row.id);
    let event = this.byId.get(id);
    if (!event) {
      const record = toAuditRecord(row);
      event = { record, eventId: `audit_${record.id}`, body: eventBody(record.action, row.time as Date, record) };
      this.byId.set(id, event);
    }
    return event;
  }
}

/** Each URL parsed and judged once per rule (a delivery run repeats it for every record); a refused one is judged again each time. */
const judged = new WeakMap<AddressRule, LRUCache<string, URL>>();
const JUDGED_URLS = 1024;

function targetOf(rule: AddressRule, text: string): URL {
  let byText = judged.get(rule);
  if (!byText) judged.set(rule, (byText = new LRUCache({ max: JUDGED_URLS })));
  let url = byText.get(text);
  if (!url) {
    url = outboundUrl(rule, text);
    byText.set(text, url);
  }
  return url;
}

/** What the attempt log keeps of a result. */
export const pick = ({ statusCode, error, ms, response }: SendResult) => ({ statusCode, error, ms, response });

/** Retry-After as seconds: a number of seconds or an HTTP date. */
function retryAfter(header: string | undefined): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : (e.message ?? String(err));
}

/** The status line's words for a status: undici's `request` hands the status alone, and HTTP/2 has no words at all. */
function statusWords(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? ''}`.trim();
}

/** The first RESPONSE_KEPT_BYTES of an answer's body; the rest is read and dropped, so its connection is reused. */
async function keptBytes(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let kept = 0;
  for await (const chunk of body) {
    if (kept >= RESPONSE_KEPT_BYTES) continue;
    chunks.push(chunk.subarray(0, RESPONSE_KEPT_BYTES - kept));
    kept += Math.min(chunk.length, RESPONSE_KEPT_BYTES - kept);
  }
  return Buffer.concat(chunks);
}

/** POSTs `body` to `url`, signed with `secrets` under `id`. Never throws: every outcome is a SendResult. */
export function send(options: SendOptions, url: string, id: string, secrets: string[], body: Buffer, signal?: AbortSignal): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<SendResult, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', abandon);
      resolve({ ...result, ms: elapsed() });
    };
    const failed = (error: string) => finish({ statusCode: null, error, response: '' });
    // Aborting the request closes its connection: one with an answer half read is never reused.
    const stop = new AbortController();
    const timer = setTimeout(() => {
      failed(`timed out after ${options.timeoutMs} ms`);
      stop.abort();
    }, options.timeoutMs);
    // Shutdown: the attempt is abandoned (and sent again later: at least once), not awaited.
    const abandon = () => {
      failed('abandoned: the service is shutting down');
      stop.abort();
    };
    if (signal?.aborted) return abandon();
    signal?.addEventListener('abort', abandon, { once: true });

    let target: URL;
    try {
      target = targetOf(options, url);
    } catch (err) {
      return failed(describe(err));
    }
    outboundRequest(options, target, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'dept-tenant-service-webhooks',
        ...signedHeaders(secrets, id, body),
      },
      body,
      signal: stop.signal,
    })
      .then(async (response) => {
        const status = response.statusCode;
        const ok = status >= 200 && status < 300;
        const redirect = status >= 300 && status < 400;
        const retry = response.headers['retry-after'];
        const kept = await keptBytes(response.body);
        finish({
          statusCode: status,
          error: ok ? null : redirect ? `${status} redirect not followed` : statusWords(status),
          // The kept bytes, decoded; a multi-byte character cut at the limit becomes U+FFFD.
          // PostgreSQL text cannot hold U+0000: a binary answer must not make its own log row fail.
          response: kept.toString('utf8').replaceAll('\u0000', '\uFFFD'),
          retryAfterSeconds: retryAfter(Array.isArray(retry) ? retry[0] : retry),
        });
      })
      .catch((err: unknown) => failed(describe(err)));
  });
}
