import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openPostgres, type Database } from '../src/db/database.js';

// The socket watcher (src/db/deadline.ts, src/db/exchange.reader.ts) reads
// every message header the server sends, to time each exchange.
// TCP may cut the server's bytes anywhere, a header included: here a proxy
// on loopback hands them over one byte per write, so every header arrives
// split, and the watcher must count exactly as it does on whole chunks.

/** A loopback proxy to `target` that passes the server's bytes on one at a time, each in its own write. */
async function byteByByteProxy(target: { host: string; port: number }): Promise<{ server: Server; port: number }> {
  const server = createServer((client: Socket) => {
    client.setNoDelay(true);
    const upstream = createConnection(target);
    const queue: number[] = [];
    let draining = false;
    const drain = () => {
      const byte = queue.shift();
      if (byte === undefined || client.destroyed) {
        draining = false;
        return;
      }
      client.write(Buffer.of(byte));
      setImmediate(drain);
    };
    upstream.on('data', (chunk: Buffer) => {
      queue.push(...chunk);
      if (!draining) {
        draining = true;
        setImmediate(drain);
      }
    });
    client.on('data', (chunk) => upstream.write(chunk));
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', close).on('error', close);
    upstream.on('close', () => setTimeout(close, 200)).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const serverUrl = inject('databaseUrl');

describe.skipIf(!serverUrl)('the socket watcher on a server whose bytes arrive one at a time', () => {
  let proxy: { server: Server; port: number };
  let db: Database;
  beforeAll(async () => {
    const url = new URL(serverUrl!);
    proxy = await byteByByteProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    db = openPostgres(url.toString(), { max: 1 });
  });
  afterAll(async () => {
    await db?.close();
    proxy?.server.close();
  });

  it('answers statements and transactions, and counts each exchange once', async () => {
    const observer = db.exchanges;
    await db.sql`SELECT 1`; // start-up done before counting
    let answered = 0;
    const stop = observer.onAnswered(() => answered++);
    try {
      for (let i = 0; i < 5; i++) expect((await db.sql<{ n: number }[]>`SELECT ${i}::int AS n, repeat('x', 300) AS pad`)[0]!.n).toBe(i);
      // BEGIN, the statement and COMMIT: one exchange each.
      await db.sql.begin(async (tx) => tx`SELECT 1`);
      await expect(db.sql`SELECT 1/0`).rejects.toMatchObject({ code: '22012' });
      expect(answered).toBe(5 + 3 + 1);
      expect(observer.inFlight).toBe(0);
      expect(observer.busy).toBe(0);
    } finally {
      stop();
    }
  });
});
