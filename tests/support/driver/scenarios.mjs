// The faults each change of patches/postgres+3.4.9.patch is for, provoked on
// purpose in a child process of tests/driver.patch.test.ts:
//   node tests/support/driver/scenarios.mjs <scenario> <postgres package dir> [database url]
// The package directory is the installed (patched) postgres.js, or a copy
// with one change taken out again, so each scenario shows both what the
// change prevents and that it is needed. Each step prints a line
// `step: outcome`; a scenario that ends the process early shows the crash.
import { connect } from 'node:net';
import { join } from 'node:path';
import { setImmediate } from 'node:timers';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { failure, fakePostgres, TERMINATED } from './fake-postgres.mjs';

const [scenario, packageDir, url] = process.argv.slice(2);
const { default: postgres } = await import(pathToFileURL(join(packageDir, 'src', 'index.js')).href);
const codeOf = (err) => err.code;
const step = (name, outcome) => console.log(`${name}: ${outcome}`);

/** A pool whose most recently opened socket is `last()`, to be closed under it. */
function poolWithSockets(options) {
  let socket;
  const sql = postgres(url, {
    connect_timeout: 5,
    onnotice: () => {},
    ...options,
    socket: ({ host, port }) => (socket = connect(port[0], host[0])),
  });
  return { sql, last: () => socket };
}

async function ending(sql) {
  await sql.end({ timeout: 1 });
  step('pool', 'ended');
}

const scenarios = {
  /**
   * A transaction's statement is in flight when its socket closes cleanly (as when the server or a
   * pooler ends the connection): the statement fails, and sql.begin answers the failed body with a
   * ROLLBACK on the connection whose socket is gone. Unpatched, that write threw outside any promise.
   */
  async 'rollback-after-close'() {
    const { sql, last } = poolWithSockets({ max: 2 });
    const outcome = await sql
      .begin(async (tx) => {
        await tx`SELECT 1`;
        const sleeping = tx`SELECT pg_sleep(10)`.execute();
        last().destroy();
        await sleeping;
      })
      .then(() => 'committed', codeOf);
    step('transaction', outcome);
    await nextTurn();
    await nextTurn();
    step('survived', 'yes');
    step('next query', (await sql`SELECT 2 AS two`)[0].two);
    await ending(sql);
  },

  /** write-after-close: a statement on a reserved connection whose socket has closed. */
  async 'reserved-after-close'() {
    const { sql, last } = poolWithSockets({ max: 2 });
    const reserved = await sql.reserve();
    await reserved`SELECT 1`;
    last().destroy();
    await sleep(50);
    step('reserved statement', await reserved`SELECT 2`.then(() => 'answered', codeOf));
    await nextTurn();
    step('survived', 'yes');
    step('next query', (await sql`SELECT 2 AS two`)[0].two);
    await ending(sql);
  },

  /**
   * transaction-after-close: the body of a transaction is still running (awaiting something else)
   * when its connection closes, and the pool starts that connection again for another query; then
   * the body sends its next statement. Unpatched, it ran on the new session, outside the transaction.
   */
  async 'late-statement'() {
    const { sql, last } = poolWithSockets({ max: 1 });
    let late = 'not sent';
    const body = sql.begin(async (tx) => {
      await tx`SELECT 1`;
      last().destroy();
      await sleep(300);
      late = await tx`SELECT 3 AS three`.then(() => 'ran outside the transaction', codeOf);
    });
    step('transaction', await body.then(() => 'committed', codeOf));
    step('next query', (await sql`SELECT 2 AS two`)[0].two);
    await sleep(500);
    step('late statement', late);
    await ending(sql);
  },

  /**
   * stale-write-timer: a statement's bytes wait for the write postgres.js schedules with
   * setImmediate when the socket closes. Unpatched, the connection's next start-up message was
   * never sent: each later query failed with CONNECT_TIMEOUT.
   */
  async 'pending-write-at-close'() {
    const { sql, last } = poolWithSockets({ max: 1, connect_timeout: 2 });
    await sql`SELECT 1`;
    // Handed over from a setImmediate callback, the statement's write waits for the next turn's
    // immediates, and the destroyed socket's 'close' comes in this turn's close phase, before them.
    const first = await new Promise((resolve) =>
      setImmediate(async () => {
        const answer = sql`SELECT 1`.execute().then(() => 'answered', codeOf);
        for (let i = 0; i < 5; i++) await null;
        last().destroy();
        resolve(answer);
      }),
    );
    step('statement at the close', await first);
    step('next query', await sql`SELECT 2 AS two`.then((rows) => rows[0].two, codeOf));
    await ending(sql);
  },

  /**
   * session-leftovers: the server ends the session (pg_terminate_backend, as a fast shutdown does)
   * while a statement runs. Unpatched, its FATAL stayed behind and failed the next session's first
   * statement.
   */
  async 'terminated-statement'() {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    const [{ pid }] = await sql`SELECT pg_backend_pid() AS pid`;
    const running = sql`SELECT x FROM generate_series(1, 2) x, LATERAL (SELECT pg_sleep(CASE WHEN x = 2 THEN 30 ELSE 0 END)) s`.then(
      () => 'answered',
      codeOf,
    );
    await sleep(300);
    await admin`SELECT pg_terminate_backend(${pid}::int)`;
    step('terminated statement', await running);
    step('next query', await sql`SELECT 1 AS one, 2 AS two`.then((rows) => JSON.stringify(rows), codeOf));
    await admin.end();
    await ending(sql);
  },

  /**
   * The first session ends with a fast shutdown's FATAL while postgres.js fetches the array types
   * (its own first statement). Unpatched, the fetch's failure was an unhandled rejection.
   */
  async 'startup-fatal'() {
    await onFakeServer({ answer: (session, kind) => (session === 1 && kind === 'types' ? TERMINATED : undefined) });
  },

  /** type-fetch-rejection: the array-type fetch is answered with an error (a statement timeout). */
  async 'types-error'() {
    await onFakeServer({
      answer: (session, kind) => (kind === 'types' ? failure('ERROR', '57014', 'canceling statement due to statement timeout') : undefined),
    });
  },

  /** state-fetch-rejection: a server older than 14 is asked its session state, and answers with an error. */
  async 'state-error'() {
    await onFakeServer({
      primary: false,
      answer: (session, kind) => (kind === 'state' ? failure('ERROR', '57014', 'canceling statement due to statement timeout') : undefined),
    });
  },

  /**
   * unnamed-types: without named statements (prepare: false, as behind a transaction pooler) the same
   * parameterised statement run again on one session. Unpatched, every run waited for the server to
   * describe its parameters before sending the values: two writes per statement. Then a column's
   * type changes under the kept types, and the statement still inserts (retried as a named one is).
   */
  async 'unnamed-repeat'() {
    let writes = 0;
    const sql = postgres(url, {
      max: 1,
      prepare: false,
      onnotice: () => {},
      socket: ({ host, port }) => {
        const socket = connect(port[0], host[0]);
        const write = socket.write.bind(socket);
        socket.write = (...args) => (writes++, write(...args));
        return socket;
      },
    });
    // Values whose text depends on the type the server gives: a string as jsonb, an array, a date.
    const run = () =>
      sql`SELECT ${1}::int + ${2} AS n, ${'x'}::jsonb AS j, ${['a', 'b']}::text[] AS a, ${new Date(0)}::timestamptz AS d`.then((rows) =>
        JSON.stringify(rows),
      );
    const first = await run();
    writes = 0;
    const again = [];
    for (let i = 0; i < 5; i++) again.push(await run());
    step('writes per run', writes / 5);
    step('same rows', again.every((rows) => rows === first) ? 'yes' : `no: ${first} then ${again}`);
    await sql`CREATE TEMP TABLE kept (c int)`;
    const insert = () => sql`INSERT INTO kept VALUES (${'1'}) RETURNING c`.then((rows) => JSON.stringify(rows[0].c), codeOf);
    await insert();
    await sql`ALTER TABLE kept ALTER c TYPE jsonb USING to_jsonb(c)`;
    step('after the type change', await insert());
    await ending(sql);
  },

  /**
   * unnamed-pipeline: through a PgBouncer in transaction mode (`url` is the pooler's), one
   * connection without named statements is handed a statement that waits on its Describe while
   * another statement runs. Unpatched, the second went behind the first (pipelined) as Parse,
   * Describe and Flush, with no Sync of its own; the pooler gave the server away at the first's
   * ReadyForQuery, and the second's answer, held up by a lock on its table, never came.
   */
  async 'pipelined-behind-unnamed'() {
    const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
    const locker = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
    const table = `pipelined_${process.pid}`;
    await sql.unsafe(`CREATE TABLE ${table} (n int)`);
    await sql`SELECT 1`; // the connection open and idle, so the next two go out together
    let release;
    const locked = new Promise((resolve) => {
      locker
        .begin(async (tx) => {
          await tx.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
          resolve();
          await new Promise((r) => (release = r));
        })
        .catch(() => {});
    });
    await locked;
    const first = sql`SELECT 1 AS one`.then(() => 'answered', codeOf);
    // Its Parse waits for the lock, so its answer comes after the first's ReadyForQuery.
    const behind = sql.unsafe(`SELECT count(*)::int AS n FROM ${table} WHERE n = $1`, [1]).then((rows) => `answered (${rows[0].n} rows)`, codeOf);
    step('first', await first);
    await sleep(200);
    release();
    step('behind it', await Promise.race([behind, sleep(3000).then(() => 'no answer in 3 s')]));
    await locker.end({ timeout: 0 });
    const direct = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
    await direct.unsafe(`DROP TABLE ${table}`);
    await direct.end();
    step('pool', 'ended');
    process.exit(0);
  },

  /**
   * query-hook: a query's onexecute is called as it is executed and what it returns as it settles,
   * with null or the error; a query only interpolated into another is never executed, so never
   * reported. Unpatched, nothing calls it: a tracer could only replace the query's own methods.
   */
  async 'query-hook'() {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const seen = [];
    const observe = (query, name) => {
      query.onexecute = (executed) => {
        seen.push(`${name} executed${executed === query ? '' : ' (another query)'}`);
        return (error) => seen.push(`${name} ${error === null ? 'answered' : `failed ${error.code}`}`);
      };
      return query;
    };
    const fragment = observe(sql`2`, 'fragment');
    const [{ two }] = await observe(sql`SELECT ${fragment}::int AS two`, 'outer');
    // Two executions of one query object: reported once.
    const twice = observe(sql`SELECT 1`, 'twice');
    await twice;
    await twice;
    const failed = await observe(sql`SELECT 1/0`, 'division').then(() => 'answered', codeOf);
    await sql.begin((tx) => observe(tx`SELECT 3`, 'in a transaction'));
    step('answers', `${two}, ${failed}`);
    step('reported', seen.join(', ') || 'nothing');
    await ending(sql);
  },

  /**
   * queue-scan: how many slots of its array one remove() searches, after a queue has been pushed
   * and shifted 10,000 times without ever emptying (as a busy pool's queue is under load).
   */
  async 'queue-scan'() {
    const { default: Queue } = await import(pathToFileURL(join(packageDir, 'src', 'queue.js')).href);
    const queue = Queue();
    queue.push({});
    let last;
    for (let i = 0; i < 10_000; i++) {
      queue.push((last = {}));
      queue.shift();
    }
    const indexOf = Array.prototype.indexOf;
    let scanned = 0;
    Array.prototype.indexOf = function (item, from = 0) {
      scanned += this.length - Math.max(0, from);
      return indexOf.call(this, item, from);
    };
    const removed = queue.remove(last) === last;
    Array.prototype.indexOf = indexOf;
    step('removed', removed ? 'yes' : 'no');
    step('slots searched', scanned <= 64 ? 'at most 64' : scanned);
  },
};

/** The start-up scenarios: a pool on the fake server, asked for the primary like the service's. */
async function onFakeServer(options) {
  const server = await fakePostgres(options);
  const sql = postgres(`postgres://fake@127.0.0.1:${server.port}/fake`, {
    max: 1,
    connect_timeout: 5,
    onnotice: () => {},
    target_session_attrs: 'primary',
  });
  step('first query', await sql`SELECT 1`.then(() => 'answered', codeOf));
  // An unhandled rejection is raised once the microtasks have run; a few turns more.
  await sleep(50);
  step('survived', 'yes');
  step('next query', (await sql`SELECT 2 AS two`)[0].two);
  await ending(sql);
  server.close();
}

if (!scenarios[scenario]) throw new Error(`no scenario ${scenario}`);
await scenarios[scenario]();
