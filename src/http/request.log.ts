import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * One log line per request, written when it has been answered: method, URL,
 * client, status and time. Fastify's default writes two (one on arrival, one
 * on completion), each a synchronous write to stdout, and the second cost
 * about a tenth of a by-id read's throughput (bench load). A request still
 * running is visible through the deadline's warning (lifecycle.ts), which
 * every request reaches within 8 s. A route's own `logLevel` (the health
 * probes log at warn) silences its line.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
