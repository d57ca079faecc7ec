// A PostgreSQL server on a loopback port that speaks just enough of the wire
// protocol to put postgres.js in the states tests/driver.patch.test.ts needs
// at an exact moment (an error or a FATAL in answer to the driver's own
// set-up statements), which a real server cannot be made to do on cue.
// Every session: trust authentication, then `answer(session, kind)` decides
// what each statement gets; the default answers are below.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:net';

/** A backend message: its type, its length, its body (a string part is NUL-terminated, a Buffer is not). */
export const message = (type, ...parts) => {
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

export const READY = message('Z', Buffer.from('I'));
/** An ErrorResponse of `severity` with `code`, then (for an ERROR) ReadyForQuery. */
export const failure = (severity, code, text) =>
  Buffer.concat([message('E', `S${severity}`, `V${severity}`, `C${code}`, `M${text}`, ''), ...(severity === 'ERROR' ? [READY] : [])]);
/** The FATAL of a fast shutdown (pg_terminate_backend gives the same). */
export const TERMINATED = failure('FATAL', '57P01', 'terminating connection due to administrator command');
/** The answer to the driver's array-type statement: no array types. */
export const NO_TYPES = Buffer.concat([message('1'), message('t', int16(0)), message('n'), message('2'), message('C', 'SELECT 0'), READY]);
/** The answer to any other statement: one row with the int4 column `two` = 2. */
export const TWO = Buffer.concat([
  message('1'),
  message('t', int16(0)),
  message('T', int16(1), 'two', int32(0), int16(0), int32(23), int16(4), int32(-1), int16(0)),
  message('2'),
  message('D', int16(1), int32(1), Buffer.from('2')),
  message('C', 'SELECT 1'),
  READY,
]);

/**
 * Starts the server. `primary`: whether sessions report in_hot_standby and
 * default_transaction_read_only as PostgreSQL 14 and later do (a server that
 * does not makes postgres.js read them with a statement of its own).
 * `answer(session, kind)` returns the bytes for a statement, or undefined for
 * the default; `kind` is 'types', 'state' or 'statement'. Returns the port
 * and a close function.
 */
export async function fakePostgres({ primary = true, answer = () => undefined } = {}) {
  const reported = primary ? [message('S', 'in_hot_standby', 'off'), message('S', 'default_transaction_read_only', 'off')] : [];
  const started = Buffer.concat([
    message('R', int32(0)),
    ...reported,
    message('S', 'server_version', primary ? '15.0' : '13.0'),
    message('S', 'client_encoding', 'UTF8'),
    message('K', int32(4242), int32(1)),
    READY,
  ]);
  let sessions = 0;
  const server = createServer((socket) => {
    const session = ++sessions;
    let startedUp = false;
    let pending = Buffer.alloc(0);
    let statement = Buffer.alloc(0);
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      if (!startedUp) {
        startedUp = true;
        socket.write(started);
        return;
      }
      // postgres.js writes whole messages; a statement ends with its Sync ('S') or is one simple Query ('Q').
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 5) {
        const end = 1 + pending.readInt32BE(1);
        if (end > pending.length) break;
        statement = Buffer.concat([statement, pending.subarray(0, end)]);
        const type = pending[0];
        pending = pending.subarray(end);
        if (type !== 0x53 && type !== 0x51) continue;
        const kind = statement.includes('pg_catalog.pg_type') ? 'types' : statement.includes('transaction_read_only') ? 'state' : 'statement';
        statement = Buffer.alloc(0);
        const bytes = answer(session, kind) ?? (kind === 'types' ? NO_TYPES : TWO);
        if (bytes.includes('SFATAL')) socket.end(bytes);
        else socket.write(bytes);
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, close: () => server.close() };
}
