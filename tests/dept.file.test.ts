import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './support/app.js';
import { createUserAndLogin } from './support/app.js';

// docs/api-rules.md#a-chart-as-a-file through HTTP: the export as CSV and
// XLSX, the import as a multipart upload or a raw body, new subtrees by
// ref/parentRef in any row order, all or nothing with every problem by line,
// the limits, who may do what, one dept.import record, and an exported file
// imported again changing nothing.

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
let t: TestApp;
let token: string;
beforeAll(async () => {
  t = await buildTestApp();
  token = t.root.token!;
});
afterAll(async () => t?.close());

async function exportFile(format: 'csv' | 'xlsx', as = token) {
  const res = await t.app.inject({ method: 'GET', url: `/system/dept-api/export?format=${format}`, headers: { authorization: `Bearer ${as}` } });
  return { status: res.statusCode, headers: res.headers, bytes: res.rawPayload };
}

async function importRaw(bytes: Buffer | string, type: string, as = token) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/system/dept-api/import',
    payload: bytes,
    headers: { authorization: `Bearer ${as}`, 'content-type': type },
  });
  return { status: res.statusCode, body: res.json() };
}

async function importMultipart(bytes: Buffer | string, fileName: string, field = 'file') {
  const boundary = '----chart-file-boundary';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${fileName}"\r\nContent-Type: text/csv\r\n\r\n`),
    Buffer.from(bytes),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return importRaw(body, `multipart/form-data; boundary=${boundary}`);
}

const depts = async () =>
  (await t.root.get<{ deptId: number; parentId: number; deptName: string; leader: string | null }[]>('/system/dept-api/list')).body.data;
const importRecords = async () =>
  (await t.sql`SELECT changes FROM audit_log WHERE tenant_id = '000000' AND action = 'dept.import'`).map((r) => r.changes);

describe('a chart as a file', () => {
  it('exports the live chart as CSV, an attachment', async () => {
    const res = await exportFile('csv');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(res.headers['content-disposition']).toBe('attachment; filename="departments-000000.csv"');
    const [head, ...rows] = res.bytes.toString().trim().split('\n');
    expect(head).toBe('deptId,parentId,deptName,orderNum,leader,phone,email,status');
    expect(rows).toHaveLength((await depts()).length);
  });

  it('imports a new subtree by ref/parentRef in any row order, with an update, as a multipart upload; one dept.import record', async () => {
    const root = (await depts())[0]!;
    const csv = [
      'deptName,parentRef,ref,parentId,deptId,leader,email,orderNum',
      'Team A,sales,,,,Li Lei with a name of more than twenty characters,a@example.com,2',
      `Sales,,sales,${root.deptId},,,,1`,
      'Team B,sales,,,,,,3',
      `${root.deptName} HQ,,,0,${root.deptId},,,0`,
    ].join('\n');
    const res = await importMultipart(csv, 'chart.csv');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ created: 3, updated: 1, unchanged: 0 });
    const after = await depts();
    const sales = after.find((d) => d.deptName === 'Sales')!;
    expect(
      after
        .filter((d) => d.parentId === sales.deptId)
        .map((d) => d.deptName)
        .sort(),
    ).toEqual(['Team A', 'Team B']);
    expect(after.find((d) => d.deptName === 'Team A')!.leader).toBe('Li Lei with a name of more than twenty characters');
    expect(after.find((d) => d.deptId === root.deptId)!.deptName).toBe(`${root.deptName} HQ`);
    expect(await importRecords()).toEqual([{ created: 3, updated: 1, unchanged: 0, rows: 4 }]);
  });

  it('an exported file imported again changes nothing and records nothing, CSV and XLSX alike, raw or multipart', async () => {
    const before = await depts();
    for (const format of ['csv', 'xlsx'] as const) {
      const file = await exportFile(format);
      expect(file.status).toBe(200);
      const raw = await importRaw(file.bytes, format === 'csv' ? 'text/csv' : XLSX);
      expect(raw.body.data).toEqual({ created: 0, updated: 0, unchanged: before.length });
    }
    const again = await importMultipart((await exportFile('csv')).bytes, 'again.csv');
    expect(again.body.data.unchanged).toBe(before.length);
    expect(await depts()).toEqual(before);
    expect(await importRecords()).toHaveLength(1);
  });

  it('reads an XLSX written by a spreadsheet: problems by row number, the header row 1', async () => {
    const book = new ExcelJS.Workbook();
    const sheet = book.addWorksheet('mine');
    sheet.addRow(['deptName', 'parentId', 'email']);
    sheet.addRow(['From Excel', 0, 'x@example.com']);
    sheet.addRow(['Bad mail', 0, 'not-an-email']);
    const res = await importRaw(Buffer.from(await book.xlsx.writeBuffer()), XLSX);
    expect(res.status).toBe(400);
    expect(res.body.msg).toMatch(/^The file was refused, nothing was written: 1 problem\(s\): line 3: email "not-an-email" would be refused/);
    sheet.getRow(3).getCell(3).value = 'ok@example.com';
    const fixed = await importRaw(Buffer.from(await book.xlsx.writeBuffer()), XLSX);
    expect(fixed.body.data).toEqual({ created: 2, updated: 0, unchanged: 0 });
  });

  it('refuses a file with problems as a whole, naming every line; nothing is written', async () => {
    const before = await depts();
    const sales = before.find((d) => d.deptName === 'Sales')!;
    const csv = [
      'deptId,parentId,deptName,ref,parentRef,status',
      '999999,0,Ghost,,,0',
      `,${sales.deptId},Team A,,,0`,
      ',,Orphan,,nowhere,0',
      `,${sales.deptId},Fine,,,0`,
      `,${sales.deptId},Bad status,,,7`,
      ',,Loop A,la,lb,0',
      ',,Loop B,lb,la,0',
    ].join('\r\n');
    const res = await importRaw(csv, 'text/csv');
    expect(res.status).toBe(400);
    for (const line of [
      'line 2: deptId 999999 names no live department',
      'line 3: "Team A" is already the name of a department under',
      'line 4: parentRef "nowhere" names no ref of this file',
      'line 6: status "7" would be refused',
      'line 7: department',
      'line 8: department',
    ])
      expect(res.body.msg).toContain(line);
    expect(res.body.msg).not.toContain('line 5');
    expect(await depts()).toEqual(before);
  });

  it('imports for admins only; exports for anyone who may read the list', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    expect((await exportFile('xlsx', user.client.token!)).status).toBe(200);
    expect((await importRaw('deptName,parentId\nX,0', 'text/csv', user.client.token!)).status).toBe(403);
    expect((await importMultipart('deptName,parentId\nX,0', 'x.csv', 'other')).status).toBe(400);
    expect((await importRaw('', 'text/csv')).status).toBe(400);
  });

  it('takes files above the 1 MiB of a JSON body, up to 16 MiB and 10,000 rows', async () => {
    const wide = `Team ${'x'.repeat(85)}`;
    const rows = Array.from({ length: 9_000 }, (_, i) => `${wide} ${i},0,${'9'.repeat(20)},${'p'.repeat(35)}@example.com,${'L'.repeat(100)}`);
    const big = ['deptName,parentId,phone,email,leader', ...rows].join('\n');
    expect(big.length).toBeGreaterThan(2 * 2 ** 20);
    const res = await importRaw(big, 'text/csv');
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.data.created).toBe(9_000);
    const tooMany = ['deptName,parentId', ...Array.from({ length: 10_001 }, (_, i) => `Row ${i},0`)].join('\n');
    expect((await importRaw(tooMany, 'text/csv')).body.msg).toContain('more than 10000 rows');
    const tooBig = Buffer.alloc(16 * 2 ** 20 + 1, 'a');
    expect((await importRaw(tooBig, 'text/csv')).status).toBe(413);
  }, 120_000);
});
