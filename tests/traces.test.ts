import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLIENT, SERVER, startOtlpReceiver, STATUS_ERROR, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';
import { call, loginAt, serviceDatabase, startService, type ServiceDatabase } from './support/service.js';

// docs/operations.md#traces: the service, spawned as a real process, sends its
// spans over OTLP/HTTP to a real receiver on loopback (both protocols), and
// sends nothing at all when tracing is not configured.

const PASSWORD = 'traces-admin-pw-1';

let receiver: OtlpReceiver;
let db: ServiceDatabase;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  db = await serviceDatabase();
});
afterAll(async () => {
  await receiver?.close();
  await db?.dispose();
});

/** A W3C traceparent of our own, as an upstream service would send it. */
function traceparent() {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
}

/**
 * Starts the service with `otel` added to its environment, logs in, creates a
 * department with a distinctive name, reads it back under an incoming
 * traceparent, asks for a department that does not exist (404), and stops the
 * service (its shutdown flushes the spans).
 */
async function session(otel: Record<string, string>) {
  const startedAt = BigInt(Date.now()) * 1_000_000n;
  const service = await startService({ ...db.env, ADMIN_PASSWORD: PASSWORD, ...otel });
  try {
    const secretName = `Secret-${randomBytes(6).toString('hex')}`;
    const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
    // A probe, as an orchestrator sends them: its route logs from warn up only.
    expect((await fetch(`${service.base}/readyz`)).status).toBe(200);
    const created = await fetch(`${service.base}/system/dept-api`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ parentId: 100, deptName: secretName, orderNum: 1 }),
    });
    expect(created.status).toBe(200);
    const id = Number(/\/(\d+)$/.exec(created.headers.get('location') ?? '')?.[1]);
    const incoming = traceparent();
    const read = await fetch(`${service.base}/system/dept-api/${id}`, {
      headers: { authorization: `Bearer ${token}`, traceparent: incoming.header, tracestate: 'upstream=t61rcWkgMzE' },
    });
    expect(read.status).toBe(200);
    // A search term rides in the query string, which is never recorded.
    const listed = await call(service.base, 'GET', `/system/dept-api/list?deptName=${secretName}`, undefined, token);
    expect(listed.status).toBe(200);
    // A caller whose trace was not sampled: flags 00 in its traceparent.
    const unsampled = traceparent();
    const tree = await fetch(`${service.base}/system/dept-api/tree`, {
      headers: { authorization: `Bearer ${token}`, traceparent: unsampled.header.replace(/-01$/, '-00') },
    });
    expect(tree.status).toBe(200);
    const stopped = await service.stop();
    return { service, secretName, token, id, incoming, unsampled, stopped, between: [startedAt, BigInt(Date.now()) * 1_000_000n] as const };
  } finally {
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
  }
}

/** The service's JSON log lines so far. */
function logLines(service: { output(): string }) {
  return service
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; req?: { url?: string }; trace_id?: string; span_id?: string });
}

function attr(span: ReceivedSpan, name: string) {
  return span.attributes[name];
}

describe.each([
  ['http/protobuf', (base: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: base })],
  ['http/json', (base: string) => ({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${base}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })],
])('traces over OTLP %s', (protocol, env) => {
  it('a server span per request with its route and status, statement spans under it, the incoming trace honoured, no values', async () => {
    receiver.requests.length = 0;
    const { service, secretName, token, id, incoming, unsampled, stopped, between } = await session({
      ...env(receiver.base),
      OTEL_SERVICE_NAME: 'traces-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=abc%20def',
    });
    expect(stopped.code).toBe(0);

    expect(receiver.requests.length).toBeGreaterThan(0);
    for (const request of receiver.requests) {
      expect(request.path).toBe('/v1/traces');
      expect(request.contentType).toBe(protocol === 'http/json' ? 'application/json' : 'application/x-protobuf');
      expect(request.headers['x-collector-key']).toBe('abc def');
      // Not the department's name, not the password, not the token: not in any byte sent.
      for (const secret of [secretName, PASSWORD, token]) expect(request.body.includes(secret), `${secret} in an export`).toBe(false);
    }
    const spans = receiver.spans();
    expect(spans[0]!.resource).toMatchObject({ 'service.name': 'traces-test', 'deployment.environment.name': 'test' });
    // Every span: the service's scope, and a start and an end on the wall clock, in order, within the session.
    for (const s of spans) {
      expect(s.scope).toBe('dept-tenant-service');
      expect(s.start <= s.end, `${s.name} ends before it starts`).toBe(true);
      expect(s.start >= between[0] && s.end <= between[1], `${s.name} outside the session`).toBe(true);
    }

    // Exactly one SERVER span for the read, in the caller's trace, under the caller's span.
    const reads = spans.filter((s) => s.kind === SERVER && attr(s, 'url.path') === `/system/dept-api/${id}`);
    expect(reads).toHaveLength(1);
    const read = reads[0]!;
    expect(read).toMatchObject({ name: 'GET /system/dept-api/:id', traceId: incoming.traceId, parentSpanId: incoming.parentId });
    expect(read.attributes).toMatchObject({ 'http.route': '/system/dept-api/:id', 'http.response.status_code': 200, 'http.request.method': 'GET' });
    expect(read.status.code).not.toBe(STATUS_ERROR);
    // The caller's tracestate goes on with its trace, to the statements' spans too.
    expect(read.traceState).toBe('upstream=t61rcWkgMzE');

    // Its statements: children of it, with the text as sent ($n placeholders) and the database named.
    const statements = spans.filter((s) => s.parentSpanId === read.spanId);
    expect(statements.length).toBeGreaterThan(0);
    for (const s of statements) {
      expect(s.kind).toBe(CLIENT);
      expect(s.traceId).toBe(incoming.traceId);
      expect(s.traceState).toBe('upstream=t61rcWkgMzE');
      // A statement runs within its request.
      expect(s.start >= read.start && s.end <= read.end, `${s.name} outside its request`).toBe(true);
      expect(s.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'db.namespace': expect.any(String), 'db.query.text': expect.any(String) });
      expect(String(attr(s, 'db.query.text'))).not.toContain(String(id));
    }
    expect(statements.some((s) => /\$1/.test(String(attr(s, 'db.query.text'))) && /sys_dept/.test(String(attr(s, 'db.query.text'))))).toBe(true);
    if (db.kind === 'postgresql') {
      expect(statements[0]!.attributes).toMatchObject({ 'server.address': expect.any(String), 'server.port': expect.any(Number) });
    }

    // The create (a body, a transaction): a root span of its own, its statements under it.
    const creates = spans.filter((s) => s.kind === SERVER && s.name === 'POST /system/dept-api');
    expect(creates).toHaveLength(1);
    expect(creates[0]!.parentSpanId).toBe('');
    expect(creates[0]!.traceState).toBe('');
    expect(spans.some((s) => s.parentSpanId === creates[0]!.spanId && /\bINSERT INTO sys_dept\b/.test(String(attr(s, 'db.query.text'))))).toBe(true);

    // The list's query string (the search term) is not recorded; the path is.
    const list = spans.find((s) => s.kind === SERVER && s.name === 'GET /system/dept-api/list');
    expect(list?.attributes['url.path']).toBe('/system/dept-api/list');

    // The login was one request: one SERVER span.
    expect(spans.filter((s) => s.kind === SERVER && s.name === 'POST /auth/login')).toHaveLength(1);
    // No span per hook or handler: every span is a request's or a statement's.
    for (const s of spans) expect([SERVER, CLIENT]).toContain(s.kind);

    // The request's log line carries the exported span's ids.
    const lines = logLines(service);
    const logged = lines.find((line) => line.msg === 'request completed' && line.req?.url === `/system/dept-api/${id}`);
    expect(logged).toMatchObject({ trace_id: incoming.traceId, span_id: read.spanId, reqId: expect.any(String) });

    // The caller's unsampled trace is followed (the default sampler is parent-based): no span for the request,
    // nor for its statements, and its log line has no trace ids, there being no trace to lead to.
    expect(spans.filter((s) => s.traceId === unsampled.traceId)).toEqual([]);
    expect(spans.some((s) => s.kind === SERVER && s.name === 'GET /system/dept-api/tree')).toBe(false);
    const unsampledLine = lines.find((line) => line.msg === 'request completed' && line.req?.url === '/system/dept-api/tree');
    expect(unsampledLine).toBeDefined();
    expect(unsampledLine).not.toHaveProperty('trace_id');
    expect(unsampledLine).not.toHaveProperty('span_id');
    // A route's own log level holds on a traced request: the probe (logged from warn up) wrote no line.
    const probe = spans.find((s) => s.kind === SERVER && s.name === 'GET /readyz');
    expect(probe).toBeDefined();
    expect(spans.some((s) => s.kind === CLIENT && s.parentSpanId === probe!.spanId && attr(s, 'db.query.text') === 'SELECT 1')).toBe(true);
    expect(lines.filter((line) => line.req?.url === '/readyz')).toEqual([]);
  });
});

describe('requests at once', () => {
  it("each sampled request's statements are under its own span and nobody else's; one its caller did not sample records none", async () => {
    receiver.requests.length = 0;
    const service = await startService({ ...db.env, ADMIN_PASSWORD: PASSWORD, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base });
    const sampled: { traceId: string; create: boolean }[] = [];
    const unsampled: string[] = [];
    try {
      const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
      const headers = (traceparentHeader: string) => ({
        authorization: `Bearer ${token}`,
        traceparent: traceparentHeader,
        'content-type': 'application/json',
      });
      // Reads, creates (a transaction each) and reads whose caller did not sample, interleaved and all in flight together.
      const answers = await Promise.all(
        Array.from({ length: 36 }, (_, i) => {
          const incoming = traceparent();
          if (i % 3 === 2) {
            unsampled.push(incoming.traceId);
            return fetch(`${service.base}/system/dept-api/100`, { headers: headers(incoming.header.replace(/-01$/, '-00')) });
          }
          const create = i % 3 === 1;
          sampled.push({ traceId: incoming.traceId, create });
          return create
            ? fetch(`${service.base}/system/dept-api`, {
                method: 'POST',
                headers: headers(incoming.header),
                body: JSON.stringify({ parentId: 100, deptName: `At once ${i}`, orderNum: i }),
              })
            : fetch(`${service.base}/system/dept-api/100`, { headers: headers(incoming.header) });
        }),
      );
      for (const answer of answers) expect(answer.status).toBe(200);
      expect((await service.stop()).code).toBe(0);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
    const spans = receiver.spans();
    for (const { traceId, create } of sampled) {
      const inTrace = spans.filter((s) => s.traceId === traceId);
      const servers = inTrace.filter((s) => s.kind === SERVER);
      expect(servers).toHaveLength(1);
      const statements = inTrace.filter((s) => s.kind === CLIENT);
      expect(statements.length).toBeGreaterThan(0);
      for (const s of statements) expect(s.parentSpanId).toBe(servers[0]!.spanId);
      expect(statements.some((s) => /\bINSERT INTO sys_dept\b/.test(String(attr(s, 'db.query.text'))))).toBe(create);
    }
    for (const traceId of unsampled) expect(spans.filter((s) => s.traceId === traceId)).toEqual([]);
  });
});

/** The SDK's trace-id ratio rule: a trace is kept when the XOR of its id's four 32-bit words is below ratio * 0xffffffff. */
function ratioKeeps(traceId: string, ratio: number): boolean {
  let words = 0;
  for (let i = 0; i < 32; i += 8) words = (words ^ parseInt(traceId.slice(i, i + 8), 16)) >>> 0;
  return words < Math.floor(ratio * 0xffffffff);
}

describe('a ratio sampler', () => {
  it('decides on the trace id the span then has: each request it keeps is exported with its statements and logged with that trace, the others neither', async () => {
    receiver.requests.length = 0;
    const service = await startService({
      ...db.env,
      ADMIN_PASSWORD: PASSWORD,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base,
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
    });
    try {
      const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
      for (let i = 0; i < 60; i++) expect((await call(service.base, 'GET', '/system/dept-api/100', undefined, token)).status).toBe(200);
      expect((await service.stop()).code).toBe(0);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
    const spans = receiver.spans();
    const reads = spans.filter((s) => s.kind === SERVER && s.name === 'GET /system/dept-api/:id');
    const logged = logLines(service).filter((line) => line.msg === 'request completed' && line.req?.url === '/system/dept-api/100');
    expect(logged).toHaveLength(60);
    // About half kept (60 draws: outside 10-50 once in some 10^8 runs), each by the SDK's rule on its own trace id.
    expect(reads.length).toBeGreaterThan(10);
    expect(reads.length).toBeLessThan(50);
    for (const read of reads) {
      expect(ratioKeeps(read.traceId, 0.5), read.traceId).toBe(true);
      expect(spans.some((s) => s.kind === CLIENT && s.parentSpanId === read.spanId)).toBe(true);
    }
    // The requests that led to a trace in the log are exactly those exported, with the same ids.
    const tracedLines = logged.filter((line) => line.trace_id !== undefined);
    expect(tracedLines.map((line) => `${line.trace_id}/${line.span_id}`).sort()).toEqual(reads.map((s) => `${s.traceId}/${s.spanId}`).sort());
  });
});

describe('a failure', () => {
  // The service's database is altered from outside while it runs: PostgreSQL only (the embedded one lives inside the service).
  it.skipIf(inject('databaseUrl') === '')('is an error span: the statement with its SQLSTATE and no message, the request on its 5xx', async () => {
    receiver.requests.length = 0;
    const service = await startService({ ...db.env, ADMIN_PASSWORD: PASSWORD, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base });
    const admin = postgres(db.directUrl!, { max: 1, onnotice: () => {} });
    try {
      const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
      // The table a read by id needs is gone for a moment: a server fault, not the client's (42P01, answered 500).
      await admin`ALTER TABLE sys_dept RENAME TO sys_dept_away`;
      const failed = await call(service.base, 'GET', '/system/dept-api/100', undefined, token);
      await admin`ALTER TABLE sys_dept_away RENAME TO sys_dept`;
      expect(failed.status).toBe(500);
      const ok = await call(service.base, 'GET', '/system/dept-api/999999', undefined, token);
      expect(ok.status).toBe(404);
      expect((await service.stop()).code).toBe(0);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await admin.end();
    }
    const spans = receiver.spans();
    const request = spans.find((s) => s.kind === SERVER && attr(s, 'url.path') === '/system/dept-api/100');
    expect(request).toMatchObject({ name: 'GET /system/dept-api/:id', status: { code: STATUS_ERROR, message: '' } });
    expect(request!.attributes['http.response.status_code']).toBe(500);
    expect(request!.eventNames).toEqual([]);
    const statement = spans.find((s) => s.parentSpanId === request!.spanId && s.status.code === STATUS_ERROR);
    expect(statement).toMatchObject({ status: { code: STATUS_ERROR, message: '42P01' } });
    expect(statement!.attributes).toMatchObject({ 'db.response.status_code': '42P01', 'error.type': '42P01' });
    // PostgreSQL's message names the missing table; the span has the code only.
    for (const r of receiver.requests) expect(r.body.includes('does not exist')).toBe(false);
    // A 4xx is not an error of the service.
    const notFound = spans.find((s) => s.kind === SERVER && attr(s, 'url.path') === '/system/dept-api/999999');
    expect(notFound?.attributes['http.response.status_code']).toBe(404);
    expect(notFound?.status.code).not.toBe(STATUS_ERROR);
  });
});

describe('traces off', () => {
  it('sends nothing when no OTLP endpoint is configured, and the log lines carry no trace ids', async () => {
    receiver.requests.length = 0;
    const { service, id, stopped } = await session({});
    expect(stopped.code).toBe(0);
    // Export would have happened by now (the shutdown flushes); a bounded extra wait for stragglers.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.requests).toHaveLength(0);
    const logged = service
      .output()
      .split('\n')
      .find((line) => line.includes('"request completed"') && line.includes(`/system/dept-api/${id}"`));
    expect(logged).toBeDefined();
    expect(logged).not.toContain('trace_id');
  });
});
