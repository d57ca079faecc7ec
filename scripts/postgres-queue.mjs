// npm's postinstall: replaces postgres.js's internal Queue (3.4.x,
// node_modules/postgres/{src,cjs/src}/queue.js) with one whose remove() does
// not scan the slots shift() has emptied. The pool moves a connection
// between its queues on every query, and under sustained load (every
// connection busy, queries pipelined onto them) its busy queue is shifted
// without ever emptying, so the emptied slots piled up, one per query, and
// each move scanned them all: a tenth of the service's CPU after a minute of
// load, growing for as long as the load lasted. Same behaviour otherwise.
// A file that is not the original (another version, or already replaced) is
// left as it is, with a note.

import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ORIGINAL_BODY = `function Queue(initial = []) {
  let xs = initial.slice()
  let index = 0

  return {
    get length() {
      return xs.length - index
    },
    remove: (x) => {
      const index = xs.indexOf(x)
      return index === -1
        ? null
        : (xs.splice(index, 1), x)
    },
    push: (x) => (xs.push(x), x),
    shift: () => {
      const out = xs[index++]

      if (index === xs.length) {
        index = 0
        xs = []
      } else {
        xs[index - 1] = undefined
      }

      return out
    }
  }
}`;

const FIXED_BODY = `function Queue(initial = []) {
  // Patched by scripts/postgres-queue.mjs: remove() searches only the live
  // part [index, length), and the emptied front is dropped once it is the
  // larger part, so neither time nor memory grows with the queries served.
  let xs = initial.slice()
  let index = 0

  return {
    get length() {
      return xs.length - index
    },
    remove: (x) => {
      const at = xs.indexOf(x, index)
      return at === -1
        ? null
        : (xs.splice(at, 1), x)
    },
    push: (x) => (xs.push(x), x),
    shift: () => {
      const out = xs[index++]

      if (index === xs.length) {
        index = 0
        xs = []
      } else if (index > 64 && index * 2 > xs.length) {
        xs = xs.slice(index)
        index = 0
      } else {
        xs[index - 1] = undefined
      }

      return out
    }
  }
}`;

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres');
for (const file of ['src/queue.js', 'cjs/src/queue.js']) {
  const path = join(root, file);
  if (!existsSync(path)) continue;
  const text = readFileSync(path, 'utf8');
  if (text.includes(FIXED_BODY)) continue;
  if (!text.includes(ORIGINAL_BODY)) {
    console.warn(`postgres-queue: ${path} is not the postgres.js 3.4 Queue this replaces; left as it is`);
    continue;
  }
  writeFileSync(path, text.replace(ORIGINAL_BODY, FIXED_BODY));
}
