// The bare-stack baseline for `npm run bench -- load|big`: Fastify 5 +
// postgres.js + @fastify/jwt and nothing else, on the same database and rows
// as the service, answering in the same envelope. It verifies the service's
// token (same JWT_SECRET) but reads no session; `list` answers the tenant's
// rows as one `json_agg` built by the database; `tree` answers the same rows
// nested, the cheapest bare way we measured (the rows in list order from
// postgres.js, nested through a Map, one JSON.stringify; parsing the json_agg
// instead was slower). Its writes
// (`npm run bench -- writes`) do only what a correct create or move must:
// lock what the rule reads (a create its parent; a move the department, its
// new parent and, in one pass, its subtree), check for a cycle, compute the
// paths, write, in one transaction; no audit record, no depth rule, no
// validation beyond the parent's existence, no confirming second pass over
// the subtree (the service makes one: src/depts/dept.locks.ts, lockMove).
// Its quota consume (`npm run bench -- quota`) is the bare guarded UPDATE.
//
//   PORT=19401 JWT_SECRET=... DATABASE_URL=... node --import tsx bench/baseline.server.ts
//   PORT=19401 JWT_SECRET=... DATA_DIR=... node --import tsx bench/baseline.server.ts   (embedded copy)

import Fastify from 'fastify';
import fastifyJwt from '@fastify/jwt';
import { openEmbedded, openPostgres } from '../src/db/database.js';

const port = Number(process.env.PORT);
const secret = process.env.JWT_SECRET!;
// DB_PREPARE as the service reads it, so a run through a transaction pooler compares like with like.
const db = process.env.DATABASE_URL
  ? openPostgres(process.env.DATABASE_URL, { prepare: process.env.DB_PREPARE !== 'false' })
  : await openEmbedded(process.env.DATA_DIR);
const { sql } = db;

const app = Fastify({ logger: false });
await app.register(fastifyJwt, { secret });
app.addHook('onRequest', async (request, reply) => {
  try {
    await request.jwtVerify();
  } catch {
    return reply.code(401).send({ code: 401, msg: 'Access token is invalid', data: null });
  }
});

const tenantOf = (request: { user: unknown }) => (request.user as { tid: string }).tid;
const ROW = sql`
  dept_id AS "deptId", parent_id AS "parentId", ancestors, dept_name AS "deptName", order_num AS "orderNum",
  leader, phone, email, status, del_flag AS "delFlag", tenant_id AS "tenantId", create_by AS "createBy",
  to_char(create_time, 'YYYY-MM-DD HH24:MI:SS') AS "createTime", update_by AS "updateBy",
  to_char(update_time, 'YYYY-MM-DD HH24:MI:SS') AS "updateTime"`;

app.get<{ Params: { id: string } }>('/system/dept-api/:id', async (request, reply) => {
  const [row] = await sql`SELECT ${ROW} FROM sys_dept WHERE tenant_id = ${tenantOf(request)} AND dept_id = ${request.params.id} AND del_flag = '0'`;
  if (!row) return reply.code(404).send({ code: 404, msg: 'not found', data: null });
  return { code: 200, msg: 'success', data: row };
});

app.get('/system/dept-api/list', async (request, reply) => {
  const [{ json }] = (await sql`
    SELECT coalesce(json_agg(d ORDER BY "parentId", "orderNum", "deptId"), '[]')::text AS json
    FROM (SELECT ${ROW} FROM sys_dept WHERE tenant_id = ${tenantOf(request)} AND del_flag = '0') d`) as unknown as [{ json: string }];
  reply.header('content-type', 'application/json; charset=utf-8');
  return `{"code":200,"msg":"success","data":${json}}`;
});

interface Node {
  deptId: number;
  parentId: number;
  children: Node[];
}

app.get('/system/dept-api/tree', async (request, reply) => {
  const rows = (await sql`
    SELECT ${ROW} FROM sys_dept WHERE tenant_id = ${tenantOf(request)} AND del_flag = '0'
    ORDER BY parent_id, order_num, dept_id`) as unknown as Node[];
  const byId = new Map<number, Node>();
  for (const row of rows) byId.set(row.deptId, Object.assign(row, { children: [] }));
  const roots: Node[] = [];
  for (const row of rows) (byId.get(row.parentId)?.children ?? roots).push(row);
  reply.header('content-type', 'application/json; charset=utf-8');
  return JSON.stringify({ code: 200, msg: 'success', data: roots });
});

const created = (reply: { header(k: string, v: string): unknown }, id: number) => {
  reply.header('location', `/system/dept-api/${id}`);
  return { code: 200, msg: 'success', data: null };
};
const refused = (reply: { code(n: number): { send(body: unknown): unknown } }, status: number) =>
  reply.code(status).send({ code: status, msg: 'refused', data: null });

// Create: the parent checked and share-locked (so it cannot be deleted or moved before the commit), the path from it, one INSERT.
app.post<{ Body: { parentId: number; deptName: string } }>('/system/dept-api', async (request, reply) => {
  const tenant = tenantOf(request);
  const { parentId, deptName } = request.body;
  const id = await sql.begin(async (tx) => {
    const [parent] = await tx<{ ancestors: string }[]>`
      SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenant} AND dept_id = ${parentId} AND del_flag = '0' FOR SHARE`;
    if (!parent) return undefined;
    const [row] = await tx<{ id: number }[]>`
      INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
      VALUES (${tenant}, ${parentId}, ${`${parent.ancestors},${parentId}`}, ${deptName}, 'baseline') RETURNING dept_id AS id`;
    return row!.id;
  });
  return id === undefined ? refused(reply, 400) : created(reply, id);
});

// Move: the department locked, the new parent share-locked, the cycle check (a walk up from the new parent), the subtree
// locked (one pass), the row, its subtree's paths.
app.put<{ Body: { deptId: number; parentId: number; deptName: string } }>('/system/dept-api', async (request, reply) => {
  const tenant = tenantOf(request);
  const { deptId, parentId, deptName } = request.body;
  const status = await sql.begin(async (tx) => {
    const [moved] = await tx<{ ancestors: string }[]>`
      SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenant} AND dept_id = ${deptId} AND del_flag = '0' FOR UPDATE`;
    const [parent] = await tx<{ ancestors: string }[]>`
      SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenant} AND dept_id = ${parentId} AND del_flag = '0' FOR SHARE`;
    if (!moved || !parent) return 400;
    const [{ cycle }] = (await tx`
      WITH RECURSIVE up AS (
        SELECT dept_id, parent_id FROM sys_dept WHERE tenant_id = ${tenant} AND dept_id = ${parentId}
        UNION
        SELECT d.dept_id, d.parent_id FROM sys_dept d JOIN up ON d.tenant_id = ${tenant} AND d.dept_id = up.parent_id
      ) SELECT EXISTS (SELECT 1 FROM up WHERE dept_id = ${deptId}) AS cycle`) as unknown as [{ cycle: boolean }];
    if (cycle) return 409;
    // The subtree locked before its paths are rewritten, so a create under it waits rather than keeping an old path.
    await tx`
      WITH RECURSIVE subtree AS (
        SELECT dept_id FROM sys_dept WHERE tenant_id = ${tenant} AND parent_id = ${deptId}
        UNION ALL
        SELECT d.dept_id FROM sys_dept d JOIN subtree s ON d.tenant_id = ${tenant} AND d.parent_id = s.dept_id
      )
      SELECT count(*) FROM (SELECT 1 FROM sys_dept WHERE tenant_id = ${tenant} AND dept_id IN (SELECT dept_id FROM subtree) FOR UPDATE) locked`;
    const path = `${parent.ancestors},${parentId}`;
    await tx`UPDATE sys_dept SET parent_id = ${parentId}, ancestors = ${path}, dept_name = ${deptName}, update_time = now()
      WHERE tenant_id = ${tenant} AND dept_id = ${deptId}`;
    const oldPrefix = `${moved.ancestors},${deptId}`;
    await tx`
      WITH RECURSIVE subtree AS (
        SELECT dept_id FROM sys_dept WHERE tenant_id = ${tenant} AND parent_id = ${deptId}
        UNION ALL
        SELECT d.dept_id FROM sys_dept d JOIN subtree s ON d.tenant_id = ${tenant} AND d.parent_id = s.dept_id
      )
      UPDATE sys_dept d SET ancestors = ${`${path},${deptId}`} || substr(d.ancestors, ${oldPrefix.length + 1})
      FROM subtree s WHERE d.tenant_id = ${tenant} AND d.dept_id = s.dept_id`;
    return 200;
  });
  return status === 200 ? { code: 200, msg: 'success', data: null } : refused(reply, status);
});

// Quota (`npm run bench -- quota`): the bare guarded UPDATE a consume must at
// least make, on a usage row the bench seeded: the limit checked in the
// statement that counts. No tenant check, no idempotency key, no ledger, no
// threshold, no period, no validation.
app.post<{ Params: { tenantId: string }; Body: { counter: string; amount: number } }>(
  '/system/quota-api/:tenantId/consume',
  async (request, reply) => {
    const { counter, amount } = request.body;
    const [row] = await sql<{ used: string; lim: number }[]>`
      UPDATE quota_usage SET used = used + ${amount}
      WHERE tenant_id = ${request.params.tenantId} AND counter = ${counter} AND used + ${amount} <= last_limit
      RETURNING used, last_limit AS lim`;
    if (!row) return refused(reply, 409);
    return { code: 200, msg: 'success', data: { used: Number(row.used), remaining: row.lim - Number(row.used) } };
  },
);

await app.listen({ port, host: '127.0.0.1' });
const stop = async () => {
  await app.close();
  await db.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
