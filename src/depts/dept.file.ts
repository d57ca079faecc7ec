import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import ExcelJS from 'exceljs';
import { AppError } from '../core/app.error.js';

// A chart as a file (docs/api-rules.md#a-chart-as-a-file): CSV or XLSX, one
// department a row under a header row. The export writes EXPORTED; an import
// reads those columns plus `ref` and `parentRef` (labels for new rows), in
// any order, each row with its line number (the header is line 1 in CSV,
// row 1 in XLSX).

const EXPORTED = ['deptId', 'parentId', 'deptName', 'orderNum', 'leader', 'phone', 'email', 'status'] as const;
const IMPORTED = new Set<string>([...EXPORTED, 'ref', 'parentRef']);
const MAX_FILE_ROWS = 10_000;
export const MAX_FILE_BYTES = 16 * 1024 * 1024;

export type ChartFormat = 'csv' | 'xlsx';
export const MEDIA_TYPES: Record<ChartFormat, string> = {
  csv: 'text/csv',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

/** One row of a file: its line, and its cells by column name ('' when empty). */
export interface FileRow {
  line: number;
  cells: Record<string, string>;
}

/** The format of an uploaded file: from its media type, else its name, else its first bytes (an XLSX is a zip). */
export function formatOf(mediaType: string | undefined, fileName: string | undefined, bytes: Buffer): ChartFormat {
  const type = (mediaType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === MEDIA_TYPES.xlsx || /\.xlsx$/i.test(fileName ?? '')) return 'xlsx';
  if (type === MEDIA_TYPES.csv || /\.csv$/i.test(fileName ?? '')) return 'csv';
  return bytes.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04])) ? 'xlsx' : 'csv';
}

function header(names: string[]): string[] {
  const problems = names.filter((name) => !IMPORTED.has(name)).map((name) => `line 1: unknown column "${name}"`);
  if (!names.includes('deptName')) problems.push('line 1: the column "deptName" is missing');
  if (new Set(names).size !== names.length) problems.push('line 1: a column is named twice');
  if (problems.length > 0) throw new AppError(400, `The file was refused: ${problems.join('; ')}`);
  return names;
}

const tooMany = () => new AppError(400, `The file was refused: it holds more than ${MAX_FILE_ROWS} rows`);

function readCsv(bytes: Buffer): FileRow[] {
  // Parsing stops after one row more than allowed (the header counts as a record): the rest is never read.
  const records = parse(bytes, { bom: true, relax_column_count: true, skip_empty_lines: true, info: true, to: MAX_FILE_ROWS + 2 }) as unknown as {
    record: string[];
    info: { lines: number };
  }[];
  if (records.length === 0) throw new AppError(400, 'The file was refused: it is empty');
  const names = header(records[0]!.record.map((name) => name.trim()));
  if (records.length > MAX_FILE_ROWS + 1) throw tooMany();
  return records.slice(1).map(({ record, info }) => ({
    line: info.lines,
    cells: Object.fromEntries(names.map((name, i) => [name, (record[i] ?? '').trim()])),
  }));
}

async function readXlsx(bytes: Buffer): Promise<FileRow[]> {
  const book = new ExcelJS.Workbook();
  try {
    await book.xlsx.load(bytes as unknown as ArrayBuffer);
  } catch {
    throw new AppError(400, 'The file was refused: it is not a readable XLSX workbook');
  }
  const sheet = book.worksheets[0];
  if (!sheet || sheet.actualRowCount === 0) throw new AppError(400, 'The file was refused: it is empty');
  if (sheet.actualRowCount > MAX_FILE_ROWS + 1) throw tooMany();
  const text = (row: ExcelJS.Row, column: number) => row.getCell(column).text.trim();
  const first = sheet.getRow(1);
  const names = header(Array.from({ length: first.cellCount }, (_, i) => text(first, i + 1)));
  const rows: FileRow[] = [];
  sheet.eachRow((row, number) => {
    if (number === 1) return;
    const cells = Object.fromEntries(names.map((name, i) => [name, text(row, i + 1)]));
    if (Object.values(cells).some((value) => value !== '')) rows.push({ line: number, cells });
  });
  return rows;
}

export async function readChartFile(bytes: Buffer, format: ChartFormat): Promise<FileRow[]> {
  if (format === 'xlsx') return readXlsx(bytes);
  try {
    return readCsv(bytes);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError(400, `The file was refused: ${(err as Error).message}`);
  }
}

type Exported = Record<(typeof EXPORTED)[number], string | number | null>;

/** The chart as a file: EXPORTED's columns, a header row, then one row a department. */
export async function writeChartFile(rows: Exported[], format: ChartFormat): Promise<Buffer> {
  const values = rows.map((row) => EXPORTED.map((column) => row[column] ?? ''));
  if (format === 'csv') return Buffer.from(stringify([[...EXPORTED], ...values]));
  const book = new ExcelJS.Workbook();
  const sheet = book.addWorksheet('departments');
  sheet.addRow([...EXPORTED]);
  // Every cell as text: an id, a phone number or a status keeps its digits as written.
  for (const row of values) sheet.addRow(row.map(String));
  return Buffer.from(await book.xlsx.writeBuffer());
}
