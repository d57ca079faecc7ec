// Provokes the postgres.js null-socket crash (porsager/postgres#1154) on
// purpose, for tests/driver.guard.test.ts:
//   node tests/support/driver-crash.mjs <database url> <dist dir> guarded|unguarded
// A transaction's statement is in flight when its socket closes cleanly (as
// when the server or a pooler ends the connection): postgres.js fails the
// statement, then answers the failed transaction body with a ROLLBACK on the
// connection whose socket it has just dropped. That small write is flushed
// from a setImmediate, which reads `write` of the null socket and throws
// outside any promise. Guarded (src/db/driver.guard.ts, built to dist/), the
// process must live on: report the transaction's failure, run another query
// and end the pool. Unguarded it must die of that TypeError, which shows the
// crash is real. Each step is printed as a line `step: outcome`.
import { connect } from 'node:net';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';

const [url, dist, mode] = process.argv.slice(2);
if (mode === 'guarded') {
  const { guardDriverCrash } = await import(pathToFileURL(join(dist, 'db', 'driver.guard.js')).href);
  guardDriverCrash((message) => console.error(message));
}

let socket;
// Two connections: the one that crashes keeps the ROLLBACK it could not send
// (the guard cannot repair postgres.js's state), the other runs the next query.
const sql = postgres(url, {
  max: 2,
  connect_timeout: 5,
  onnotice: () => {},
  socket: ({ host, port }) => (socket = connect(port[0], host[0])),
});

const outcome = await sql
  .begin(async (tx) => {
    await tx`SELECT 1`;
    const sleeping = tx`SELECT pg_sleep(10)`.execute();
    // The transaction's own socket (the last one opened), closed without an error.
    socket.destroy();
    await sleeping;
  })
  .then(
    () => 'committed',
    (err) => err.code,
  );
console.log(`transaction: ${outcome}`);
// The ROLLBACK's write is flushed (and throws) on the next turns of the event loop.
await nextTurn();
await nextTurn();
console.log(`survived: yes`);
const [row] = await sql`SELECT 2 AS two`;
console.log(`next query: ${row.two}`);
await sql.end({ timeout: 1 });
console.log('pool: ended');
