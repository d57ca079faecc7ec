// How one variable is read: the kinds of value the configuration is made of
// (a number in a range, a flag, seconds, a PostgreSQL URL), each refusing a
// bad value with a ConfigError that names the variable. Which variables the
// service reads, and what each means, is src/config.ts.
import { DatabaseUrlError, parseDatabaseUrl } from './db/url.js';

export class ConfigError extends Error {}

/** The variable's value as given; unset and "" alike are undefined. */
export function text(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

export function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

export function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return raw === 'true';
}

/** A number of seconds, fractions allowed (tests use short ones). */
export function seconds(name: string, raw: string, max: number): number {
  const value = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(value > 0) || value > max) {
    throw new ConfigError(`${name} must be a number of seconds above 0 and at most ${max}, got "${raw}"`);
  }
  return value;
}

/** A libpq-style URL, possibly with several hosts (src/db/url.ts); the error never repeats the URL, which may hold a password. */
export function postgresUrl(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  try {
    parseDatabaseUrl(raw);
  } catch (err) {
    if (err instanceof DatabaseUrlError) throw new ConfigError(`${name} ${err.message}`);
    throw err;
  }
  return raw;
}
