import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A real webhook receiver on a loopback port: it records every request with
// the exact bytes received and answers what the test scripts (a status,
// headers, a delay), by default 204. Tests read `received` and script
// `answer`.

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body as received, byte for byte. */
  raw: Buffer;
  /** When the request arrived and when its answer was sent (Date.now()). */
  at: number;
  answeredAt?: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Milliseconds to wait before answering. */
  delayMs?: number;
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Decides the answer to each request; replace it to script failures. */
  answer: (r: Received) => Answer = () => ({ status: 204 });
  /** Requests being answered right now (a check of "one in flight"). */
  inFlight = 0;
  maxInFlight = 0;

  private constructor(private readonly server: http.Server) {}

  static async start(host = '127.0.0.1'): Promise<WebhookReceiver> {
    const server = http.createServer();
    const receiver = new WebhookReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: Received = { path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks), at: Date.now() };
        receiver.received.push(r);
        receiver.inFlight++;
        receiver.maxInFlight = Math.max(receiver.maxInFlight, receiver.inFlight);
        const a = receiver.answer(r);
        const reply = () => {
          receiver.inFlight--;
          r.answeredAt = Date.now();
          if (res.destroyed) return;
          res.writeHead(a.status, a.headers);
          res.end(a.body ?? '');
        };
        if (a.delayMs) setTimeout(reply, a.delayMs);
        else reply();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook', host = '127.0.0.1'): string {
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.port}${path}`;
  }

  /** The parsed bodies of the requests to `path` (all when omitted), in arrival order. */
  events(path?: string): { type: string; timestamp: string; data: any }[] {
    return this.received.filter((r) => path === undefined || r.path === path).map((r) => JSON.parse(r.raw.toString('utf8')));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
