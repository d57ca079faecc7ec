import { randomBytes } from 'node:crypto';
import { createCitusDatabase, dropCitusDatabase } from './citus-cluster.js';
import { setCitus } from '../../src/db/citus.js';
import { citusNodesOfRun } from './test-database.js';
import { createServer, connect, type Server, type Socket } from 'node:net';
import postgres from 'postgres';

/** Where and how the proxy cuts a connection. */
export interface CutRule {
  /** Matched against the SQL text. */
  sql: RegExp;
  /**
   * 'before': nothing of the matching message reaches the server (what the
   * client sent before it does); 'after': the matching message and the rest
   * of its exchange (up to its Sync, or the Query itself) reach the server,
   * then the connection is cut before any answer gets back.
   */
  when: 'before' | 'after';
  /**
   * Armed on a connection only once a statement matching this has gone out
   * on it: `{ sql: COMMIT, after: INSERT_DEPT }` is the COMMIT of the
   * transaction that inserted, never a background job's (on Citus the audit
   * sequencer's poll is a transaction of its own, with a COMMIT).
   */
  after?: RegExp;
  /** How many connections to cut this way (1). */
  times?: number;
  /** 'close' (FIN, the client sees the connection closed) or 'reset' (RST, ECONNRESET). Default 'close'. */
  how?: 'close' | 'reset';
}

interface Rule extends Required<Omit<CutRule, 'after'>> {
  after?: RegExp;
  hits: number;
}

/** The start-up phase's requests that the server answers without leaving it. */
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

class ClientStream {
  private buffer: Buffer = Buffer.alloc(0);
  private typed = false;
  /** Statement name -> text, from this connection's Parse messages. */
  private readonly statements = new Map<string, string>();

  /** Whole messages as they complete: [type ('' in the start-up phase), bytes, SQL text if any]. */
  *messages(chunk: Buffer): Generator<[string, Buffer, string | undefined]> {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      if (!this.typed) {
        if (this.buffer.length < 8) return;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) return;
        const code = this.buffer.readInt32BE(4);
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) this.typed = true;
        yield ['', this.take(length), undefined];
        continue;
      }
      if (this.buffer.length < 5) return;
      const length = 1 + this.buffer.readInt32BE(1);
      if (this.buffer.length < length) return;
      const message = this.take(length);
      const type = String.fromCharCode(message[0]!);
      yield [type, message, this.textOf(type, message)];
    }
  }

  private take(length: number): Buffer {
    const message = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(length);
    return message;
  }

  private textOf(type: string, message: Buffer): string | undefined {
    const strings = (count: number) => {
      const out: string[] = [];
      let at = 5;
      for (let i = 0; i < count; i++) {
        const end = message.indexOf(0, at);
        out.push(message.toString('utf8', at, end));
        at = end + 1;
      }
      return out;
    };
    if (type === 'Q') return strings(1)[0];
    if (type === 'P') {
      const [name, text] = strings(2) as [string, string];
      this.statements.set(name, text);
      return text;
    }
    if (type === 'B') return this.statements.get(strings(2)[1]!);
    return undefined;
  }
}

/**
 * A loopback TCP proxy in front of PostgreSQL that cuts a connection at a
 * chosen statement, like a failover, a pooler dropping its server connection
 * or a network reset at the worst moment. It reads just enough of the
 * client's side of the wire protocol (the untyped start-up messages, then
 * messages of a type byte and an int32 length) to know the SQL text of each
 * simple Query ('Q'), of each Parse ('P'), and of the prepared statement each
 * Bind ('B') runs (postgres.js sends a statement's text once per connection
 * and later runs it by name). The server's side is passed on untouched.
 */
export class CutProxy {
  private readonly server: Server;
  private readonly rules: Rule[] = [];
  private readonly counters: { sql: RegExp; n: number }[] = [];
  private readonly sockets = new Set<Socket>();
  /** The server sides of the cut connections, each settled once the server has closed it. */
  private readonly serverSides: Promise<void>[] = [];
  port = 0;
  /** Connections accepted so far. */
  connections = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    this.server = createServer((client) => this.accept(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  /** Arms a rule; `hits()` tells how many connections it has cut so far. */
  cutAt(rule: CutRule): { hits(): number } {
    const armed: Rule = { times: 1, how: 'close', ...rule, hits: 0 };
    this.rules.push(armed);
    return { hits: () => armed.hits };
  }

  /**
   * Counts the statements matching `sql` that the server was asked to run
   * (each Query, each Bind of a prepared statement), from now on.
   */
  count(sql: RegExp): { runs(): number } {
    const counter = { sql, n: 0 };
    this.counters.push(counter);
    return { runs: () => counter.n };
  }

  /**
   * Resolves once the server has closed every connection cut so far: it has
   * then run (or rolled back) everything it was sent on them.
   */
  async serverDone(): Promise<void> {
    await Promise.all(this.serverSides);
  }

  /** Disarms every rule and counter. */
  reset(): void {
    this.rules.length = 0;
    this.counters.length = 0;
  }

  private accept(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    this.connections++;
    this.sockets.add(client).add(upstream);
    const stream = new ClientStream();
    let cut = false;
    let pendingCut: Rule | undefined;
    // The rules whose `after` statement has gone out on this connection.
    const seen = new Set<Rule>();

    const cutNow = (rule: Rule, toServer: Buffer[]) => {
      cut = true;
      // What the server should still get is flushed before its side is closed;
      // the server closes its end once it has read everything up to the end.
      if (toServer.length > 0) upstream.write(Buffer.concat(toServer));
      upstream.end();
      this.serverSides.push(new Promise((resolve) => upstream.once('close', () => resolve())));
      if (rule.how === 'reset') client.resetAndDestroy();
      else client.destroy();
    };

    const forward = (toServer: Buffer[], type: string, message: Buffer, text: string | undefined) => {
      toServer.push(message);
      if (text === undefined || (type !== 'Q' && type !== 'B')) return;
      for (const counter of this.counters) if (counter.sql.test(text)) counter.n++;
    };

    client.on('data', (chunk: Buffer) => {
      if (cut) return;
      const toServer: Buffer[] = [];
      for (const [type, message, text] of stream.messages(chunk)) {
        if (pendingCut) {
          forward(toServer, type, message, text);
          if (type === 'S') return cutNow(pendingCut, toServer);
          continue;
        }
        const rule = text === undefined ? undefined : this.rules.find((r) => r.hits < r.times && (!r.after || seen.has(r)) && r.sql.test(text));
        if (text !== undefined) for (const r of this.rules) if (r.after?.test(text)) seen.add(r);
        if (rule) {
          rule.hits++;
          if (rule.when === 'before') return cutNow(rule, toServer);
          forward(toServer, type, message, text);
          // A simple Query is its own exchange; an extended one ends at its Sync.
          if (type === 'Q') return cutNow(rule, toServer);
          pendingCut = rule;
          continue;
        }
        forward(toServer, type, message, text);
      }
      if (toServer.length > 0) upstream.write(toServer.length === 1 ? toServer[0]! : Buffer.concat(toServer));
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!cut && !client.destroyed) client.write(chunk);
    });
    const close = () => {
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => (cut ? this.sockets.delete(client) : close()));
    upstream.on('close', close);
    client.on('error', () => {});
    upstream.on('error', () => {});
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/**
 * A fresh database cloned from the migrated template, and a CutProxy in
 * front of it: `proxied` reaches it through the proxy, `direct` without.
 * `drop()` closes the proxy and drops the database.
 */
export async function cutDatabase(serverUrl: string, template: string, prefix: string) {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  // The name is ours (prefix + hex), never input.
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const nodes = citusNodesOfRun();
  // The code under test knows it is on Citus as the service does after its start (as openTestDatabase sets it):
  // a test file that opens no other database must not rely on one run before it in the same worker.
  setCitus(nodes !== undefined);
  if (nodes) await createCitusDatabase(nodes, name, template);
  else await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  const direct = new URL(serverUrl);
  direct.pathname = `/${name}`;
  const proxy = new CutProxy(direct.hostname, Number(direct.port || 5432));
  const proxied = new URL(direct);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(await proxy.listen());
  return {
    proxy,
    proxied: proxied.toString(),
    direct: direct.toString(),
    async drop() {
      await proxy.close();
      if (nodes) await dropCitusDatabase(nodes, name);
      else await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
