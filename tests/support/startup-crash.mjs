// Provokes the crash of a session ended while postgres.js sets up a new
// connection, for tests/driver.guard.test.ts:
//   node tests/support/startup-crash.mjs <dist dir> guarded|unguarded
// A fake PostgreSQL on a loopback port ends the first session with the FATAL
// of a fast shutdown (57P01) as soon as the client sends its first statement
// after start-up: the array types postgres.js fetches on every new
// connection. The pool is the service's (the socket of src/db/deadline.ts,
// built to dist/, which makes the FATAL a socket error), so postgres.js fails
// that internal statement, whose promise nobody awaits, and the waiting query
// with the same error. Guarded (src/db/driver.guard.ts), the process must live
// on: report the query's failure, run another query on a fresh session and
// end the pool. Unguarded it must die of the unhandled rejection, which shows
// the crash is real. Each step is printed as a line `step: outcome`.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';

const [dist, mode] = process.argv.slice(2);
const { watchedSocket } = await import(pathToFileURL(join(dist, 'db', 'deadline.js')).href);
if (mode === 'guarded') {
  const { guardDriverCrash } = await import(pathToFileURL(join(dist, 'db', 'driver.guard.js')).href);
  guardDriverCrash((message) => console.error(message));
}

/** A backend message: its type, its length, its body (a string part is NUL-terminated, a Buffer is not). */
const message = (type, ...parts) => {
  const body = Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(`${part}\0`) : part)));
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
};
const int16 = (n) => Buffer.from([n >> 8, n & 0xff]);
const int32 = (n) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const READY = message('Z', Buffer.from('I'));
// A primary (PostgreSQL 14 and later report both), so target_session_attrs needs no query of its own.
const STARTED = Buffer.concat([
  message('R', int32(0)),
  message('S', 'in_hot_standby', 'off'),
  message('S', 'default_transaction_read_only', 'off'),
  message('S', 'server_version', '15.0'),
  message('S', 'client_encoding', 'UTF8'),
  message('K', int32(4242), int32(1)),
  READY,
]);
const TERMINATED = message('E', 'SFATAL', 'VFATAL', 'C57P01', 'Mterminating connection due to administrator command', '');
// The array types: none. Any other statement: one row, `two` = 2.
const NO_TYPES = Buffer.concat([message('1'), message('t', int16(0)), message('n'), message('2'), message('C', 'SELECT 0'), READY]);
const TWO = Buffer.concat([
  message('1'),
  message('t', int16(0)),
  message('T', int16(1), 'two', int32(0), int16(0), int32(23), int16(4), int32(-1), int16(0)),
  message('2'),
  message('D', int16(1), int32(1), Buffer.from('2')),
  message('C', 'SELECT 1'),
  READY,
]);

let sessions = 0;
const server = createServer((socket) => {
  const session = ++sessions;
  let started = false;
  let typesAsked = false;
  socket.on('error', () => {});
  socket.on('data', (chunk) => {
    if (!started) {
      started = true;
      socket.write(STARTED);
      return;
    }
    if (session === 1) {
      socket.end(TERMINATED);
      return;
    }
    // postgres.js writes whole messages, each statement ending with its Sync.
    typesAsked ||= chunk.includes('pg_catalog.pg_type');
    for (let at = 0; at + 5 <= chunk.length; at += 1 + chunk.readInt32BE(at + 1)) {
      if (chunk[at] !== 0x53) continue;
      socket.write(typesAsked ? NO_TYPES : TWO);
      typesAsked = false;
    }
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();

const sql = postgres(`postgres://fake@127.0.0.1:${port}/fake`, {
  max: 1,
  connect_timeout: 5,
  onnotice: () => {},
  target_session_attrs: 'primary',
  socket: watchedSocket({ ms: 5_000 }, [{ host: '127.0.0.1', port }]),
});

const outcome = await sql`SELECT 1`.then(
  () => 'answered',
  (err) => err.code,
);
console.log(`first query: ${outcome}`);
// The unhandled rejection is raised once the microtasks have run; a few turns more.
await sleep(50);
console.log('survived: yes');
const [row] = await sql`SELECT 2 AS two`;
console.log(`next query: ${row.two}`);
await sql.end({ timeout: 1 });
server.close();
console.log('pool: ended');
