import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { symbols } from 'pino';

const { chindingsSym, streamSym, needsMetadataGsym } = symbols;

/** What the line writer reads of a pino logger (its bindings as JSON text, under chindingsSym, and its destination, under streamSym). */
type PinoInternals = Record<symbol, unknown> & { isLevelEnabled?: (level: string) => boolean };
type Destination = Record<symbol, unknown> & { write(line: string): unknown };

/**
 * One log line per request, written when it has been answered: method, URL,
 * client, status and time. Fastify's default writes two (one on arrival, one
 * on completion), each a synchronous write to stdout: a second write per
 * request that the fastest reads notice (docs/benchmark.md). A request still
 * running is visible through the deadline's warning (lifecycle.ts), which
 * every request reaches within 8 s. A route's own `logLevel` (the health
 * probes log at warn) silences its line.
 *
 * An answered request's line is written as text here, field for field what
 * pino would write with Fastify's `req` and `res` serializers (a test holds
 * the two equal): it is the one line every request writes, and pino's
 * general path (serializer calls, a walk over the object's keys, the
 * strings built along the way) was most of what the line cost. Errors, and any logger or destination this does not know how to
 * write to (no logger, a transport that wants pino's metadata), take pino's
 * path.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
      return;
    }
    const log = reply.log as unknown as PinoInternals;
    const stream = log[streamSym] as Destination | undefined;
    const bindings = log[chindingsSym] as string | undefined;
    if (!stream || bindings === undefined || stream[needsMetadataGsym] || typeof log.isLevelEnabled !== 'function') {
      reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
      return;
    }
    if (!log.isLevelEnabled('info')) return;
    // Fastify's `req` serializer, key for key (JSON.stringify leaves out what is undefined, as pino does).
    const req = JSON.stringify({
      method: request.method,
      url: request.url,
      version: request.headers['accept-version'],
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket ? request.socket.remotePort : undefined,
    });
    stream.write(
      `{"level":30,"time":${Date.now()}${bindings},"req":${req},"res":{"statusCode":${reply.statusCode}},"responseTime":${reply.elapsedTime},"msg":"request completed"}\n`,
    );
  }
}
