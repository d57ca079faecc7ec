import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics } from 'prom-client';

/**
 * The management listener (docs/operations.md#metrics): `GET /metrics` in
 * the Prometheus text format, and `/healthz` and `/readyz` with the public
 * listener's answers (the app answers them, through inject), on a port of
 * its own that is not exposed to the API's clients. The API port never
 * serves /metrics.
 */
export interface ManagementListener {
  port: number;
  close(): Promise<void>;
}

class ManagementPortTaken extends Error {}

const NOT_FOUND = JSON.stringify({ code: 404, msg: 'Not found: the management listener serves /metrics, /healthz and /readyz', data: null });

export async function listenManagement(app: FastifyInstance, { port, host }: { port: number; host: string }): Promise<ManagementListener> {
  // The process metrics (CPU, memory, event loop, GC) of the process the listener reports on.
  collectDefaultMetrics({ register: app.metrics });

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      const text = await app.metrics.metrics();
      res.writeHead(200, { 'content-type': app.metrics.contentType }).end(text);
      return;
    }
    if (req.method === 'GET' && (path === '/healthz' || path === '/readyz')) {
      const reply = await app.inject({ method: 'GET', url: path });
      res.writeHead(reply.statusCode, { 'content-type': String(reply.headers['content-type'] ?? 'application/json') }).end(reply.body);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end(NOT_FOUND);
  };
  const server = createServer((req, res) => {
    answer(req, res).catch((err: unknown) => {
      app.log.error({ err }, 'management listener: request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new ManagementPortTaken(
              `MANAGEMENT_PORT ${port} on ${host} is already in use; choose another port, or unset MANAGEMENT_PORT for no management listener`,
            )
          : err,
      );
    });
    server.listen({ port, host }, resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  app.log.info(
    { port: bound, host },
    `management listener (/metrics, /healthz, /readyz) at http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
  );
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
