// The bare-stack baseline for `npm run bench -- load|big`: Fastify 5 +
// postgres.js + @fastify/jwt and nothing else, on the same database and rows
// as the service, answering in the same envelope. It verifies the service's
// token (same JWT_SECRET) but reads no session; `list` and `tree` both answer
// the tenant's rows as one `json_agg` built by the database.
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

async function chart(request: { user: unknown }, reply: { header(k: string, v: string): unknown }) {
  const [{ json }] = (await sql`
    SELECT coalesce(json_agg(d ORDER BY "parentId", "orderNum", "deptId"), '[]')::text AS json
    FROM (SELECT ${ROW} FROM sys_dept WHERE tenant_id = ${tenantOf(request)} AND del_flag = '0') d`) as unknown as [{ json: string }];
  reply.header('content-type', 'application/json; charset=utf-8');
  return `{"code":200,"msg":"success","data":${json}}`;
}
app.get('/system/dept-api/list', chart);
app.get('/system/dept-api/tree', chart);

await app.listen({ port, host: '127.0.0.1' });
const stop = async () => {
  await app.close();
  await db.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
