import sjson from 'secure-json-parse';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/app.error.js';
import { invalidText } from './unicode.js';

/**
 * JSON bodies, parsed like Fastify's default (secure-json-parse, so
 * "__proto__" and "constructor" keys cannot poison prototypes) with two
 * differences a client developer will notice:
 * - an empty body with a JSON Content-Type is "no body", as many HTTP
 *   clients send that header on every request, DELETE and logout included;
 *   a route that needs a body then says "body must be object";
 * - a refused prototype key is named as such, not reported as invalid JSON;
 * - the bytes must be UTF-8 and every string valid Unicode without NUL
 *   (src/http/unicode.ts): never silently replaced by U+FFFD.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  addJsonParser(app, 'application/json');
}

/** The same parser for another JSON media type (SCIM's `application/scim+json`), in `app`'s context. */
export function addJsonParser(app: FastifyInstance, contentType: string): void {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  app.addContentTypeParser(contentType, { parseAs: 'buffer' }, (_request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      return done(new AppError(400, 'Request body is not valid UTF-8'), undefined);
    }
    if (text.trim() === '') return done(null, undefined);
    try {
      const value: unknown = sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' });
      const problem = invalidText(value, 'body');
      if (problem) return done(new AppError(400, `Invalid input: ${problem}`), undefined);
      done(null, value);
    } catch (err) {
      const poisoned = err instanceof SyntaxError && /prototype|constructor/.test(err.message);
      done(
        new AppError(400, poisoned ? 'Request body must not contain "__proto__" or "constructor" keys' : 'Request body is not valid JSON'),
        undefined,
      );
    }
  });
}
