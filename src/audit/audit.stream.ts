import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Sql } from '../db/database.js';
import type { Caller } from '../identity/caller.js';
import type { AuditFeed } from './audit.feed.js';
import { changesAfter } from './audit.sql.js';

export interface StreamOptions {
  /** Comment line interval; also how often the hub sequences stragglers and re-checks each viewer's session. */
  heartbeatMs: number;
  /** A client whose unsent output passes this many bytes is cut off instead of buffered further. */
  maxBufferedBytes: number;
  /** A client that takes none of its pending output for this long is cut off. */
  stallMs: number;
}

// The largest record (a tenant update replacing 10,000 menu ids) is well under 1 MiB.
export const STREAM_DEFAULTS: StreamOptions = { heartbeatMs: 10_000, maxBufferedBytes: 1024 * 1024, stallMs: 30_000 };

const PAGE = 200;

interface Client {
  viewer: Caller;
  raw: ServerResponse;
  cursor: string | undefined;
  pumping: boolean;
  again: boolean;
  closed: boolean;
}

/**
 * The Server-Sent Events followers of one node. Each client keeps its own
 * cursor and pulls from the same feed query as /changes, so a stream is
 * exactly the /changes sequence: live wake-ups, resumption and catching up
 * are one code path, and a missed wake-up costs latency, never a record.
 */
export class AuditStreams {
  private readonly clients = new Set<Client>();
  private readonly unsubscribe: () => void;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly sql: Sql,
    private readonly feed: AuditFeed,
    private readonly options: StreamOptions,
    private readonly log: FastifyBaseLogger,
    /** Whether a follower's session still admits it (auth's rule, handed in by app.ts so audit never imports auth). */
    private readonly sessionIsLive: (viewer: Caller) => Promise<boolean>,
  ) {
    this.unsubscribe = feed.onPositions(() => {
      for (const client of this.clients) void this.pump(client);
    });
    this.timer = setInterval(() => void this.tick(), options.heartbeatMs);
    this.timer.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /** Takes the reply over and starts streaming after `after` (exclusive). */
  open(reply: FastifyReply, viewer: Caller, after: string | undefined): void {
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      // When the stream ends (shutdown, cut-off, revoked session) the connection goes with it, so an
      // idle keep-alive socket cannot hold up the server's close.
      connection: 'close',
      // Proxies such as nginx would otherwise hold events back in their buffers.
      'x-accel-buffering': 'no',
    });
    const client: Client = { viewer, raw, cursor: after, pumping: false, again: false, closed: false };
    this.clients.add(client);
    raw.on('close', () => {
      client.closed = true;
      this.clients.delete(client);
    });
    // Gone before we got here: 'close' has already fired and will not again.
    if (!raw.socket || raw.socket.destroyed) return this.end(client, true);
    this.send(client, ': connected\n\n');
    void this.pump(client);
  }

  /** Ends every stream (shutdown): the server can then close without waiting for followers. */
  close(): void {
    clearInterval(this.timer);
    this.unsubscribe();
    for (const client of this.clients) this.end(client);
    this.clients.clear();
  }

  private end(client: Client, destroy = false): void {
    client.closed = true;
    this.clients.delete(client);
    if (destroy) client.raw.destroy();
    else client.raw.end();
  }

  /** Writes, unless the client has stopped reading: then it is cut off and false is returned. */
  private send(client: Client, text: string): boolean {
    if (client.closed) return false;
    client.raw.write(text);
    if (client.raw.writableLength > this.options.maxBufferedBytes) {
      this.log.info({ buffered: client.raw.writableLength }, 'audit stream client is not reading; disconnected');
      this.end(client, true);
      return false;
    }
    return true;
  }

  /** True once the client's queued output has drained; false (and the client cut off) if it stalls or goes away. */
  private drained(client: Client): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        client.raw.off('drain', onDrain);
        client.raw.off('close', onClose);
        if (!ok && !client.closed) {
          this.log.info({ buffered: client.raw.writableLength }, 'audit stream client stopped reading; disconnected');
          this.end(client, true);
        }
        resolve(ok);
      };
      const onDrain = () => done(true);
      const onClose = () => done(false);
      const timer = setTimeout(() => done(false), this.options.stallMs);
      client.raw.on('drain', onDrain);
      client.raw.on('close', onClose);
    });
  }

  /** Sends everything after the client's cursor; a wake-up during a run makes it look once more. */
  private async pump(client: Client): Promise<void> {
    if (client.pumping) {
      client.again = true;
      return;
    }
    client.pumping = true;
    try {
      do {
        client.again = false;
        for (;;) {
          const events = await changesAfter(this.sql, client.viewer, client.cursor, PAGE);
          for (const event of events) {
            if (!this.send(client, `id: ${event.id}\nevent: audit\ndata: ${JSON.stringify(event)}\n\n`)) return;
            client.cursor = event.id;
            // Backpressure: no more until the client has taken what is queued.
            if (client.raw.writableNeedDrain && !(await this.drained(client))) return;
          }
          if (events.length < PAGE) break;
        }
      } while (client.again && !client.closed);
    } catch (err) {
      // The client reconnects with Last-Event-ID and loses nothing.
      this.log.warn({ err }, 'audit stream read failed; closing the stream');
      this.end(client);
    } finally {
      client.pumping = false;
    }
  }

  /**
   * Heartbeat: a comment line to every client; the viewer's session is
   * checked again (a logged-out or disabled user stops receiving); and the
   * sequencer runs, for records whose writer did not get to it.
   */
  private async tick(): Promise<void> {
    if (this.clients.size === 0) return;
    for (const client of this.clients) {
      if (!this.send(client, ': keep-alive\n\n')) continue;
      try {
        if (!(await this.sessionIsLive(client.viewer))) this.end(client);
      } catch (err) {
        this.log.warn({ err }, 'audit stream session check failed');
      }
    }
    // A failed run is logged by the feed itself; the next keep-alive runs it again.
    await this.feed.sequence().catch(() => undefined);
  }
}
