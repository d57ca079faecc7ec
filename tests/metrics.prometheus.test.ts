import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ADMIN_PASSWORD } from './support/constants.js';
import { call, freePort, loginAt, serviceDatabase, startService, type Service, type ServiceDatabase } from './support/service.js';

// docs/operations.md#metrics: a real Prometheus scrapes the service's
// management listener and answers the p99 latency query the alert rules use
// (docs/alerts.rules.yml). Prometheus is big and slow to start, so this runs
// once per CI run: in the direct PostgreSQL suite (not through the pooler,
// not in the container run), where .ci/run installs it.

const PROMETHEUS = '/usr/bin/prometheus';
const P99 = 'histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket[1m])))';

const skipReason = !existsSync(PROMETHEUS)
  ? `${PROMETHEUS} is not installed (Debian package prometheus; .ci/run installs it)`
  : inject('databaseKind') !== 'postgresql (DATABASE_URL)'
    ? `runs only in the direct PostgreSQL suite (DATABASE_URL without TEST_POOLER_URL), not on ${inject('databaseKind')}`
    : undefined;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a real Prometheus scraping the management listener', () => {
  let db: ServiceDatabase | undefined;
  let service: Service | undefined;
  let dir: string | undefined;
  let prometheus: ReturnType<typeof spawn> | undefined;
  afterAll(async () => {
    if (prometheus?.pid !== undefined && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
      process.kill(prometheus.pid, 'SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (prometheus.exitCode === null) process.kill(prometheus.pid, 'SIGKILL');
    }
    await service?.stop();
    await db?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers the p99 latency by route from the scraped histogram', { timeout: 120_000 }, async (ctx) => {
    if (skipReason !== undefined) return ctx.skip(skipReason);
    db = await serviceDatabase();
    const managementPort = await freePort();
    service = await startService({ ...db.env, MANAGEMENT_PORT: String(managementPort), ADMIN_PASSWORD });

    dir = await mkdtemp(join(tmpdir(), 'prometheus-'));
    const config = join(dir, 'prometheus.yml');
    await writeFile(
      config,
      [
        'global:',
        '  scrape_interval: 1s',
        '  evaluation_interval: 1s',
        'scrape_configs:',
        '  - job_name: dept-tenant-service',
        '    static_configs:',
        `      - targets: ['127.0.0.1:${managementPort}']`,
        '',
      ].join('\n'),
    );
    const promPort = await freePort();
    let output = '';
    prometheus = spawn(
      PROMETHEUS,
      [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout!.on('data', (d) => (output += d));
    prometheus.stderr!.on('data', (d) => (output += d));
    const api = `http://127.0.0.1:${promPort}`;

    const token = await loginAt(service.base, '000000', 'admin', ADMIN_PASSWORD);
    const deadline = Date.now() + 90_000;
    let answer: { metric: { route?: string }; value: [number, string] }[] = [];
    let up = '';
    while (Date.now() < deadline) {
      for (let i = 0; i < 5; i++) expect((await call(service.base, 'GET', '/system/dept-api/list', undefined, token)).status).toBe(200);
      const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(P99)}`).catch(() => undefined);
      if (res?.ok) {
        const body = (await res.json()) as { data: { result: typeof answer } };
        answer = body.data.result;
        if (answer.some((r) => r.metric.route === '/system/dept-api/list' && Number.isFinite(Number(r.value[1])))) break;
      }
      await sleep(500);
    }
    const upRes = await fetch(`${api}/api/v1/query?query=up`).catch(() => undefined);
    if (upRes?.ok) up = JSON.stringify(((await upRes.json()) as { data: unknown }).data);
    const list = answer.find((r) => r.metric.route === '/system/dept-api/list');
    expect(list, `no p99 for the route; up: ${up}; Prometheus said:\n${output.slice(-2000)}`).toBeDefined();
    const seconds = Number(list!.value[1]);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(10);
  });
});
