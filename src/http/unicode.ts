import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/app.error.js';

// docs/api-rules.md#requests-and-answers: strings in bodies and queries are valid Unicode. JSON may
// escape a lone UTF-16 surrogate ("\ud800") and a query may percent-encode
// bytes that are not UTF-8; either would reach the database as U+FFFD, a
// silent change of what the client sent. NUL cannot be stored at all. All
// three are refused with a 400 naming the field.

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function textProblem(text: string): string | null {
  const lone = LONE_SURROGATE.exec(text);
  if (lone) return `contains a lone UTF-16 surrogate (\\u${lone[0].charCodeAt(0).toString(16)}); strings must be valid Unicode`;
  if (text.includes('\u0000')) return 'must not contain the NUL character (\\u0000)';
  return null;
}

/** The first string (or key) in a parsed JSON value that is not valid text, as "path problem", or null. */
export function invalidText(value: unknown, path: string): string | null {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem && `${path} ${problem}`;
  }
  if (value === null || typeof value !== 'object') return null;
  for (const [key, item] of Object.entries(value)) {
    const keyProblem = textProblem(key);
    if (keyProblem) return `a property name in ${path} ${keyProblem}`;
    const found = invalidText(item, `${path}.${key}`);
    if (found) return found;
  }
  return null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Percent-decodes one query component strictly: the bytes must be UTF-8
 * (which also excludes encoded surrogates such as %ED%A0%80). A '%' not
 * followed by two hex digits stays literal, as the query parser keeps it.
 */
function decodeStrict(component: string): string | null {
  const escaped = component.replaceAll('+', ' ');
  if (!escaped.includes('%')) return escaped;
  const bytes: number[] = [];
  for (let i = 0; i < escaped.length; i++) {
    const hex = escaped.slice(i + 1, i + 3);
    if (escaped[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(escaped[i]!, 'utf8'));
    }
  }
  try {
    return utf8.decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
}

/** The first query parameter that is not valid text, as "query.name problem", or null. */
function invalidQuery(url: string): string | null {
  const mark = url.indexOf('?');
  if (mark < 0) return null;
  for (const pair of url.slice(mark + 1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const key = decodeStrict(rawKey);
    if (key === null) return `a query parameter name (${rawKey}) is not valid UTF-8 once percent-decoded`;
    const keyProblem = textProblem(key);
    if (keyProblem) return `a query parameter name ${keyProblem}`;
    if (eq < 0) continue;
    const value = decodeStrict(pair.slice(eq + 1));
    if (value === null) return `query.${key} is not valid UTF-8 once percent-decoded (an invalid byte sequence or an encoded surrogate)`;
    const problem = textProblem(value);
    if (problem) return `query.${key} ${problem}`;
  }
  return null;
}

/** Refuses (400) a request whose query string carries invalid text, before validation sees the replaced characters. */
export function refuseInvalidQueryText(app: FastifyInstance): void {
  // A callback hook (it runs on every request); invalidQuery returns at once without a query string.
  app.addHook('preValidation', (request, _reply, done) => {
    const problem = invalidQuery(request.raw.url ?? '');
    done(problem ? new AppError(400, `Invalid input: ${problem}`) : undefined);
  });
}
