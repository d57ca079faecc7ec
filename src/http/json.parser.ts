import sjson from 'secure-json-parse';
import type { FastifyInstance } from 'fastify';
import { AppError } from './app.error.js';

/**
 * JSON bodies, parsed like Fastify's default (secure-json-parse, so
 * "__proto__" and "constructor" keys cannot poison prototypes) with two
 * differences a client developer will notice:
 * - an empty body with a JSON Content-Type is "no body", as many HTTP
 *   clients send that header on every request, DELETE and logout included;
 *   a route that needs a body then says "body must be object";
 * - a refused prototype key is named as such, not reported as invalid JSON.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      const poisoned = err instanceof SyntaxError && /prototype|constructor/.test(err.message);
      done(
        new AppError(400, poisoned ? 'Request body must not contain "__proto__" or "constructor" keys' : 'Request body is not valid JSON'),
        undefined,
      );
    }
  });
}
