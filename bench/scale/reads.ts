// What `npm run bench -- scale` reads (bench/scale.bench.ts), over HTTP, as
// the small tenant's admin, the platform admin and the admin of a tenant made
// through the API (newestReads), on either database:
// the tenant list's pages and name filters, the audit list's pages and
// filters, the change feed, the stream's catch-up, login, a department by id
// and the tree. Each read checks its answer (statuses, page sizes, the
// records a catch-up delivers), never its time.

import { randomUUID } from 'node:crypto';
import { ADMIN_PASSWORD } from '../harness/database.js';
import { AUDIT, code, DEPTS, SMALL, SMALL_SUBTREE, type Seeded } from './seed.js';

type Which = 'scale' | 'empty';

interface Target {
  port: number;
  db: Seeded;
}

interface Read {
  label: string;
  /** Runs the read once against `which`; throws on a wrong answer. */
  run(which: Which): Promise<void>;
  /** A GET that can be sent over and over under load (its path and headers on `which`); absent for the stream and login. */
  request?(which: Which): { path: string; headers: Record<string, string> };
}

async function call(target: Target, method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: object) {
  const res = await fetch(`http://127.0.0.1:${target.port}${path}`, {
    method,
    headers: body ? { ...headers, 'content-type': 'application/json' } : headers,
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path} on ${target.db.name}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as { code: number; data: unknown };
}

async function login(target: Target, tenantId: string): Promise<Record<string, string>> {
  const { data } = await call(target, 'POST', '/auth/login', {}, { tenantId, username: 'admin', password: ADMIN_PASSWORD });
  return { authorization: `Bearer ${(data as { access_token: string }).access_token}` };
}

/** Opens the audit stream after `after` and reads until `count` records have arrived; returns their ids. */
async function catchUp(target: Target, headers: Record<string, string>, after: string, count: number): Promise<string[]> {
  const abort = new AbortController();
  const res = await fetch(`http://127.0.0.1:${target.port}/system/audit-api/stream`, {
    headers: { ...headers, 'last-event-id': after },
    signal: abort.signal,
  });
  if (res.status !== 200) throw new Error(`stream on ${target.db.name}: ${res.status}`);
  const ids: string[] = [];
  const decoder = new TextDecoder();
  let text = '';
  const timer = setTimeout(() => abort.abort(), 60_000);
  try {
    for await (const chunk of res.body!) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const id = /^id: (\d+)$/m.exec(text.slice(0, end))?.[1];
        if (id) ids.push(id);
        text = text.slice(end + 2);
      }
      if (ids.length >= count) break;
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  if (ids.length < count) throw new Error(`stream on ${target.db.name}: ${ids.length} of ${count} records`);
  return ids;
}

/** Every read of both callers, their expected answers taken from the databases as seeded. */
export async function readsOf(targets: Record<Which, Target>): Promise<Read[]> {
  // First: its tenants count in the platform's list, whose pages are worked out below.
  const newest = await newestReads(targets);
  const callers = {
    small: { tenantId: code(SMALL), pageSize: 3, tenants: SMALL_SUBTREE.length },
    platform: { tenantId: '000000', pageSize: 10, tenants: 0 },
  };
  const reads: Read[] = [];
  for (const [who, caller] of Object.entries(callers)) {
    const headers = { scale: await login(targets.scale, caller.tenantId), empty: await login(targets.empty, caller.tenantId) };
    const tenantTotal = (which: Which) => (who === 'small' ? caller.tenants : targets[which].db.tenants);
    const get = (label: string, path: (which: Which) => string, check: (data: never, which: Which) => void) =>
      reads.push({
        label: `${who.padEnd(8)} ${label}`,
        async run(which) {
          const { code: status, data } = await call(targets[which], 'GET', path(which), headers[which]);
          if (status !== 200) throw new Error(`${label}: code ${status}`);
          check(data as never, which);
        },
        request: (which) => ({ path: path(which), headers: headers[which] }),
      });
    const pageRows = (total: number, pageNum: number) => Math.max(0, Math.min(caller.pageSize, total - (pageNum - 1) * caller.pageSize));
    const lastPage = (total: number) => Math.max(1, Math.ceil(total / caller.pageSize));
    for (const [name, pageOf] of [
      ['first', () => 1],
      ['middle', (total: number) => Math.ceil(lastPage(total) / 2)],
      ['last', lastPage],
    ] as const) {
      get(
        `tenant list, ${name} page`,
        (which) => `/system/tenant-api/list?pageSize=${caller.pageSize}&pageNum=${pageOf(tenantTotal(which))}`,
        (data: { rows: unknown[] }, which) => {
          const want = pageRows(tenantTotal(which), pageOf(tenantTotal(which)));
          if (data.rows.length !== want) throw new Error(`tenant list ${name} page: ${data.rows.length} rows, expected ${want}`);
        },
      );
    }
    // The last page again, by cursor: after the last id of the page before it (docs/api-rules.md#paging).
    const cursorOf = async (which: Which) => {
      const before = lastPage(tenantTotal(which)) - 1;
      if (before < 1) return '0';
      const path = `/system/tenant-api/list?pageSize=${caller.pageSize}&pageNum=${before}`;
      return ((await call(targets[which], 'GET', path, headers[which])).data as { rows: { id: string }[] }).rows.at(-1)!.id;
    };
    const lastCursor = { scale: await cursorOf('scale'), empty: await cursorOf('empty') };
    get(
      'tenant list, last page by cursor',
      (which) => `/system/tenant-api/list?pageSize=${caller.pageSize}&after=${lastCursor[which]}`,
      (data: { rows: unknown[] }, which) => {
        const want = pageRows(tenantTotal(which), lastPage(tenantTotal(which)));
        if (data.rows.length !== want) throw new Error(`tenant list by cursor: ${data.rows.length} rows, expected ${want}`);
      },
    );
    // Names of the small tenant's subtree: "Tenant 1" matches tenants 1, 10-19, 100-199, 1000-1999...
    get(
      'tenant list, name filter',
      () => `/system/tenant-api/list?pageSize=${caller.pageSize}&tenantName=${encodeURIComponent('Tenant 1')}`,
      (data: { rows: { tenantName: string }[] }) => {
        if (data.rows.length !== caller.pageSize || data.rows.some((r) => !r.tenantName.includes('Tenant 1')))
          throw new Error(`tenant list by name: ${data.rows.length} rows`);
      },
    );
    get(
      'tenant list, rare name',
      () => `/system/tenant-api/list?pageSize=${caller.pageSize}&tenantName=${encodeURIComponent(`Tenant ${SMALL + 5}.`)}`,
      (data: { rows: unknown[]; total: number }) => {
        if (data.rows.length !== 1 || data.total !== 1) throw new Error(`tenant list by a rare name: ${data.rows.length} rows`);
      },
    );
    const audit = (label: string, query: string, atLeast = 1) =>
      get(
        `audit list, ${label}`,
        () => `/system/audit-api/list?pageSize=10${query}`,
        (data: { rows: unknown[] }) => {
          if (data.rows.length < Math.min(atLeast, 10)) throw new Error(`audit list ${label}: ${data.rows.length} rows`);
        },
      );
    const day = new Date(Date.now() - 3 * 86_400_000);
    const ymd = `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, '0')}-${String(day.getDate()).padStart(2, '0')}`;
    audit('first page', '', 10);
    audit('page 5', '&pageNum=5', 10);
    audit('action', '&action=dept.update', 10);
    audit('entityType', '&entityType=user', 10);
    const [sample] = (
      (await call(targets.empty, 'GET', `/system/audit-api/list?pageSize=1&action=dept.update&tenantId=${code(SMALL)}`, headers.empty)).data as {
        rows: { entityId: string }[];
      }
    ).rows;
    audit('entityId', `&entityId=${sample!.entityId}`);
    audit('userName', '&userName=ops', 10);
    audit('tenantId', `&tenantId=${code(SMALL)}`, 10);
    audit('beginTime+endTime', `&beginTime=${ymd}&endTime=${ymd}`, 1);
    // The change feed far from the start: the last tenth of the log.
    const after = Math.floor(AUDIT * 0.9);
    get(
      `change feed after ${after}`,
      () => `/system/audit-api/changes?limit=100&after=${after}`,
      (data: { events: { id: string }[] }) => {
        if (data.events.length === 0 || Number(data.events[0]!.id) <= after) throw new Error('change feed: no records after the cursor');
      },
    );
    // Catch-up: the stream from a cursor to the records logged since. The small admin sees the same
    // records in both databases; the platform admin is given a cursor with the same number after it.
    const backlog = Math.min(200, targets.empty.db.records);
    const cursor = async (which: Which) => {
      if (who === 'small') return String(after);
      const page = (await call(targets[which], 'GET', `/system/audit-api/list?pageSize=1&pageNum=${backlog + 1}`, headers[which])).data as {
        rows: { id: string }[];
      };
      return page.rows[0]!.id;
    };
    const cursors = { scale: await cursor('scale'), empty: await cursor('empty') };
    const expected = {
      scale: (await call(targets.scale, 'GET', `/system/audit-api/changes?limit=1000&after=${cursors.scale}`, headers.scale)).data as {
        events: unknown[];
      },
      empty: (await call(targets.empty, 'GET', `/system/audit-api/changes?limit=1000&after=${cursors.empty}`, headers.empty)).data as {
        events: unknown[];
      },
    };
    reads.push({
      label: `${who.padEnd(8)} stream catch-up`,
      async run(which) {
        await catchUp(targets[which], headers[which], cursors[which], expected[which].events.length);
      },
    });
    reads.push({
      label: `${who.padEnd(8)} login`,
      async run(which) {
        await login(targets[which], caller.tenantId);
      },
    });
    const dept = 1000 + ((who === 'small' ? SMALL : -1) + 1) * DEPTS + 5;
    get(
      'dept by id',
      () => `/system/dept-api/${dept}`,
      (data: { deptId: number }) => {
        if (data.deptId !== dept) throw new Error(`dept ${dept}: got ${data.deptId}`);
      },
    );
    get(
      'dept tree',
      () => '/system/dept-api/tree',
      (data: unknown[]) => {
        if (data.length < 1) throw new Error('dept tree: no roots');
      },
    );
  }
  return [...reads, ...newest];
}

/**
 * A user's newest customer, made through the API on each database after the
 * seed, as a user makes one (the platform admin creates it with its admin,
 * then two tenants below it): its admin's first page of the tenant list and
 * of the audit list, ten rows a page. The seeded small tenant has a
 * thousand records and stands in the statistics; this one is the newest
 * row of every table it is in, with a handful of records.
 */
async function newestReads(targets: Record<Which, Target>): Promise<Read[]> {
  const made = {} as Record<Which, Record<string, string>>;
  for (const which of ['scale', 'empty'] as const) {
    const platform = await login(targets[which], '000000');
    const name = `Newest ${randomUUID().slice(0, 8)}`;
    const tenant = { companyName: name, contactUserName: 'Newest', contactPhone: '+86 21 5555 0100' };
    await call(targets[which], 'POST', '/system/tenant-api', platform, { ...tenant, tenantName: name, username: 'admin', password: ADMIN_PASSWORD });
    const listed = (await call(targets[which], 'GET', `/system/tenant-api/list?tenantName=${encodeURIComponent(name)}`, platform)).data as {
      rows: { tenantId: string; tenantName: string }[];
    };
    const code = listed.rows.find((r) => r.tenantName === name)!.tenantId;
    for (const k of [1, 2])
      await call(targets[which], 'POST', '/system/tenant-api', platform, {
        ...tenant,
        companyName: `${name} ${k}`,
        tenantName: `${name} ${k}`,
        tenantParent: code,
      });
    targets[which].db.tenants += 3;
    made[which] = await login(targets[which], code);
  }
  const read = (label: string, path: string, check: (rows: unknown[]) => boolean): Read => ({
    label: `newest   ${label}`,
    async run(which) {
      const { data } = await call(targets[which], 'GET', path, made[which]);
      if (!check((data as { rows: unknown[] }).rows)) throw new Error(`newest ${label}: unexpected rows`);
    },
    request: (which) => ({ path, headers: made[which] }),
  });
  return [
    read('tenant list, first page', '/system/tenant-api/list?pageNum=1&pageSize=10', (rows) => rows.length === 3),
    read('audit list, first page', '/system/audit-api/list?pageNum=1&pageSize=10', (rows) => rows.length >= 1),
  ];
}
