import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { expect } from 'vitest';

export interface SseEvent {
  id: string;
  event: string;
  data: any;
  /** performance.now() when it arrived. */
  at: number;
}

/** A minimal Server-Sent Events client over real HTTP, for the stream tests. */
export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  status = 0;
  headers: IncomingMessage['headers'] = {};
  body = '';
  ended = false;
  private buffer = '';
  private req: ClientRequest | null = null;

  /** Resolves once the response headers are in (or the request failed). */
  static open(baseUrl: string, path: string, headers: Record<string, string>): Promise<SseClient> {
    const client = new SseClient();
    return new Promise((resolve, reject) => {
      const req = request(`${baseUrl}${path}`, { headers }, (res) => {
        client.status = res.statusCode ?? 0;
        client.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => client.receive(chunk));
        res.on('end', () => client.finish());
        res.on('close', () => client.finish());
        res.on('error', () => client.finish());
        resolve(client);
      });
      req.on('error', (err) => (client.status ? client.finish() : reject(err)));
      req.end();
      client.req = req;
    });
  }

  private receive(chunk: string): void {
    this.body += this.status === 200 ? '' : chunk;
    this.buffer += chunk;
    let cut: number;
    while ((cut = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
        else {
          const colon = line.indexOf(':');
          fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
        }
      }
      if (fields.data !== undefined) {
        this.events.push({ id: fields.id ?? '', event: fields.event ?? 'message', data: JSON.parse(fields.data), at: performance.now() });
      }
    }
  }

  private finish(): void {
    this.ended = true;
  }

  /** Waits until `predicate` holds, polling every 20 ms, at most `ms`; fails naming `what` when it does not. */
  async until(predicate: () => boolean, ms: number, what: string): Promise<void> {
    await expect.poll(predicate, { timeout: ms, interval: 20, message: `waiting for ${what}` }).toBe(true);
  }

  close(): void {
    this.req?.destroy();
  }
}
