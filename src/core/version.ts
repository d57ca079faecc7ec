import { hash } from 'node:crypto';
import { assert } from './app.error.js';

/**
 * Lost-update protection (docs/api-rules.md#concurrency-control) for one department, user or tenant.
 *
 * The ETag is a hash of the record exactly as GET returns it, so it changes
 * whenever anything a client can see changes (updateTime included) and
 * never because of a write that leaves the record as it was; no version
 * column to keep in step, and bookkeeping writes cannot disturb it.
 *
 * `If-Match` on PUT and single-id DELETE is checked inside the write's
 * transaction, after the write has locked the record (a row lock, or the users
 * lock), so of two writes sent with the same ETag the second sees the
 * first's result and is refused with 412. `*` matches any live record.
 * Without If-Match a write behaves as before (RuoYi clients do not send it).
 */
export function etagOf(record: object): string {
  return etagOfText(JSON.stringify(record));
}

/** etagOf a record already serialised: `text` is JSON.stringify(record). */
export function etagOfText(text: string): string {
  // crypto.hash: the one-shot form, without a Hash object per call (it runs on every GET by id).
  return `"${hash('sha256', text, 'base64url').slice(0, 32)}"`;
}

/** The If-Match header of a request, or undefined when it is absent or blank. */
export function ifMatchOf(request: { headers: { 'if-match'?: string } }): string | undefined {
  const value = request.headers['if-match'];
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** Strong comparison (RFC 9110 §13.1.1): a weak tag W/"…" never matches. */
function matches(ifMatch: string, etag: string): boolean {
  return ifMatch.trim() === '*' || ifMatch.split(',').some((tag) => tag.trim() === etag);
}

/**
 * Called by a write after it has locked the record and found it live: 412
 * unless If-Match is absent, `*`, or names the record's current ETag.
 */
export async function checkIfMatch(ifMatch: string | undefined, current: () => Promise<object | undefined>, what: string): Promise<void> {
  if (ifMatch === undefined || ifMatch.trim() === '*') return;
  const record = await current();
  assert(
    record && matches(ifMatch, etagOf(record)),
    412,
    `${what} has changed since you read it: If-Match ${ifMatch} is not its current ETag; GET it again and reapply your change`,
  );
}

/**
 * A multi-id DELETE cannot carry one version for several records: only `*`
 * (every id must be live, as always) is accepted there; anything else is 400.
 */
export function assertIfMatchFits(ifMatch: string | undefined, ids: unknown[]): void {
  assert(
    ifMatch === undefined || ids.length === 1 || ifMatch.trim() === '*',
    400,
    'If-Match names one version of one record: send it with a single id, or delete without it',
  );
}

/** RFC 9110 If-None-Match: `*` or a list of entity tags, weak ones compared weakly. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}
