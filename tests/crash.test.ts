import { describe, expect, it } from 'vitest';
import { openEmbedded, openPostgres } from '../src/db/database.js';
import { expectTreeInvariants } from './support/invariants.js';
import { call, loginAt, serviceDatabase, startService } from './support/service.js';

// docs/operations.md: every acknowledged write survives kill -9 of the service.
// Four clients create and move departments as fast as the service answers;
// the service is killed with SIGKILL in the middle, restarted on the same
// database, and every create and move that was answered 200 must be there.
// A request cut off by the kill may or may not have committed: a move whose
// answer never came may show either parent. Five cycles, then the tree's
// invariants from the raw rows.

const PASSWORD = 'crash-test-pw-1';
const CYCLES = 5;
const CLIENTS = 4;

interface Known {
  name: string;
  parent: number;
  /** A move sent but not answered: the parent it asked for. */
  pending?: number;
}

const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

describe('kill -9 in the middle of concurrent creates and moves', () => {
  it(`loses no acknowledged write over ${CYCLES} kill cycles, and the tree stays whole`, async () => {
    const db = await serviceDatabase();
    const env = { ...db.env, ADMIN_PASSWORD: PASSWORD };
    const acked = new Map<number, Known>();
    let writesAcked = 0;

    async function verify(base: string, token: string) {
      const list = await call(base, 'GET', '/system/dept-api/list', undefined, token);
      const found = new Map<number, { deptName: string; parentId: number }>(list.body.data.map((d: { deptId: number }) => [d.deptId, d]));
      for (const [id, known] of acked) {
        const row = found.get(id);
        expect(row, `department ${id} (${known.name}) was answered 200 and is gone`).toBeDefined();
        expect(row!.deptName).toBe(known.name);
        expect([known.parent, known.pending ?? known.parent], `parent of ${id}`).toContain(row!.parentId);
        acked.set(id, { name: known.name, parent: row!.parentId });
      }
    }

    try {
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const service = await startService(env);
        const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
        await verify(service.base, token);

        let killed = false;
        const client = async (c: number) => {
          const mine: number[] = [];
          for (let i = 0; !killed; i++) {
            const parents = [0, ...acked.keys()];
            try {
              if (mine.length > 0 && Math.random() < 0.4) {
                const id = pick(mine);
                const known = acked.get(id)!;
                const parent = pick(parents.filter((p) => p !== id));
                acked.set(id, { ...known, pending: parent });
                const res = await call(service.base, 'PUT', '/system/dept-api', { deptId: id, parentId: parent, deptName: known.name }, token);
                // Refused (a cycle, 409) changes nothing; 200 is the new state.
                acked.set(id, res.status === 200 ? { name: known.name, parent } : known);
                if (res.status === 200) writesAcked++;
              } else {
                const name = `k${cycle}c${c}n${i}`;
                const parent = pick(parents);
                const res = await call(service.base, 'POST', '/system/dept-api', { parentId: parent, deptName: name }, token);
                if (res.status === 200) {
                  const id = Number(res.headers.get('location')!.split('/').pop());
                  acked.set(id, { name, parent });
                  mine.push(id);
                  writesAcked++;
                }
              }
            } catch {
              return; // the connection died with the service: that write's outcome is unknown
            }
          }
        };
        const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
        await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
        killed = true;
        service.child.kill('SIGKILL');
        expect((await service.exited).signal).toBe('SIGKILL');
        await Promise.all(clients);
      }

      const last = await startService(env);
      await verify(last.base, await loginAt(last.base, '000000', 'admin', PASSWORD));
      expect(await last.stop()).toEqual({ code: 0, signal: null });
      expect(writesAcked).toBeGreaterThan(CYCLES);

      const raw = db.kind === 'embedded' ? await openEmbedded(db.env.DATA_DIR) : openPostgres(db.directUrl!, { max: 1 });
      try {
        await expectTreeInvariants(raw.sql);
      } finally {
        await raw.close();
      }
    } finally {
      await db.dispose();
    }
  }, 300_000);
});
