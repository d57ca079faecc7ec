import { Type } from '@sinclair/typebox';
import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../core/app.error.js';
import { AUTHED, responses, WITH_BODY } from '../http/envelope.schema.js';
import { requestActor } from '../identity/caller.js';
import { transaction } from '../db/retry.js';
import { routesPlugin } from '../http/routes.plugin.js';
import { formatOf, MAX_FILE_BYTES, MEDIA_TYPES, readChartFile, writeChartFile, type ChartFormat } from './dept.file.js';
import { exportRows, importChart } from './dept.import.sql.js';

const tags = ['departments'];
const FILE_LIMIT_TEXT = '16 MiB';

/**
 * /system/dept-api/export and /import: the chart as a CSV or XLSX file
 * (docs/api-rules.md#a-chart-as-a-file). HTTP only; the file's reading and
 * writing are dept.file.ts, the rules dept.import.plan.ts, the SQL
 * dept.import.sql.ts. The import takes a multipart upload (field `file`) or
 * the raw body with its media type, up to 16 MiB, not the 1 MiB of a JSON
 * body.
 */
export const deptFileRoutes = routesPlugin('dept-file-routes', async (app) => {
  await app.register(multipart, { limits: { fileSize: MAX_FILE_BYTES, files: 1, fields: 0, parts: 1 } });
  app.addContentTypeParser(
    [MEDIA_TYPES.csv, MEDIA_TYPES.xlsx, 'application/octet-stream'],
    { parseAs: 'buffer', bodyLimit: MAX_FILE_BYTES },
    (_req, body, done) => done(null, body),
  );

  async function upload(request: FastifyRequest): Promise<{ bytes: Buffer; format: ChartFormat }> {
    if (request.isMultipart()) {
      const part = await request.file();
      if (!part || part.fieldname !== 'file') throw new AppError(400, 'The upload must carry the file in the multipart field "file"');
      const bytes = await part.toBuffer().catch((err: { code?: string }) => {
        if (err.code === 'FST_REQ_FILE_TOO_LARGE') throw new AppError(413, `The file is larger than ${FILE_LIMIT_TEXT}`);
        throw err;
      });
      return { bytes, format: formatOf(part.mimetype, part.filename, bytes) };
    }
    const bytes = request.body;
    if (!Buffer.isBuffer(bytes) || bytes.length === 0) throw new AppError(400, 'The body must be a CSV or XLSX file');
    return { bytes, format: formatOf(request.headers['content-type'], undefined, bytes) };
  }

  app.get(
    '/export',
    {
      config: { permission: 'system:dept:list', rawResponse: true },
      schema: {
        operationId: 'exportDepts',
        summary: "The caller's tenant's live departments as a CSV or XLSX file",
        description:
          'Columns deptId, parentId, deptName, orderNum, leader, phone, email, status; parents before children. ' +
          'The same file imported again changes nothing.',
        tags,
        querystring: Type.Object({ format: Type.Optional(Type.Union([Type.Literal('csv'), Type.Literal('xlsx')], { default: 'csv' })) }),
        response: responses(
          Type.Unsafe<Buffer>({
            description: 'The file, as an attachment (Content-Disposition), not an envelope',
            content: {
              [MEDIA_TYPES.csv]: { schema: { type: 'string' } },
              [MEDIA_TYPES.xlsx]: { schema: { type: 'string', format: 'binary' } },
            },
          }),
          [400, ...AUTHED],
        ),
      },
    },
    async (request, reply) => {
      const format = request.query.format ?? 'csv';
      const body = await writeChartFile(await exportRows(request.sql, request.caller.tenantId), format);
      reply
        .header('content-type', format === 'csv' ? `${MEDIA_TYPES.csv}; charset=utf-8` : MEDIA_TYPES.xlsx)
        .header('content-disposition', `attachment; filename="departments-${request.caller.tenantId}.${format}"`);
      return reply.send(body);
    },
  );

  app.post(
    '/import',
    {
      config: { permission: 'system:dept:edit' },
      bodyLimit: MAX_FILE_BYTES,
      schema: {
        operationId: 'importDepts',
        summary: 'Create and update departments from a CSV or XLSX file, all or nothing',
        description:
          'A multipart upload (field "file") or the raw body as text/csv or the XLSX media type, up to 16 MiB and 10,000 rows. ' +
          'Rows with a deptId update it, rows without one create; ref and parentRef name new rows. ' +
          'Problems are listed by line (the header is line 1): 400, nothing written. One dept.import audit record.',
        tags,
        consumes: ['multipart/form-data', MEDIA_TYPES.csv, MEDIA_TYPES.xlsx],
        body: Type.Unsafe<unknown>({ description: 'The file' }),
        response: responses(
          Type.Object({ created: Type.Integer(), updated: Type.Integer(), unchanged: Type.Integer() }, { description: 'What the file changed' }),
          [...WITH_BODY, ...AUTHED, 409],
        ),
      },
    },
    async (request) => {
      const { bytes, format } = await upload(request);
      const rows = await readChartFile(bytes, format);
      return transaction(request.sql, (tx) => importChart(tx, requestActor(request), rows));
    },
  );
});
