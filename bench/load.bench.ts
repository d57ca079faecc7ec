// `npm run bench -- load`: GET /system/dept-api/{id}, tree and list of
// ~BENCH_DEPTS (1,000) departments, the built service beside the bare-stack
// baseline (bench/baseline.server.ts) as child processes on 127.0.0.1, on the
// same database and rows, driven over real HTTP by autocannon in interleaved
// rounds (bench/harness/). Figures are printed beside the baseline's from the
// same run, as ratios; nothing here asserts a time.
//
// BENCH_ONLY=id, tree or list: that target alone. The database, the ports and
// the service's settings: bench/harness/database.ts and bench/harness/pair.ts.

import { randomBytes } from 'node:crypto';
import { prepare } from './harness/database.js';
import { get, MANAGEMENT, scrapeEverySecond, startBoth } from './harness/pair.js';
import { stopAll } from './harness/processes.js';
import { cannon, CONNECTIONS, interleaved, memoryOf, ROUNDS, SECONDS } from './harness/rounds.js';
import { fmt } from './harness/stats.js';

const DEPTS = Number(process.env.BENCH_DEPTS ?? 1_000);

export async function load(): Promise<void> {
  const prepared = await prepare(DEPTS, randomBytes(32).toString('hex'));
  try {
    const { service, baseline, headers, managementPort, otlp } = await startBoth(prepared);
    console.log(`database: ${prepared.description}`);
    console.log(
      MANAGEMENT ? `management listener on port ${managementPort}, /metrics scraped every second` : 'no management listener (BENCH_MANAGEMENT=off)',
    );
    const stopScraping = MANAGEMENT ? scrapeEverySecond(managementPort) : undefined;
    console.log(
      `${ROUNDS} interleaved rounds of ${SECONDS} s, ${CONNECTIONS} connections, service LOG_LEVEL ${process.env.LOG_LEVEL ?? 'info (default)'}, ` +
        `traces ${otlp ? 'on (BENCH_OTLP=1: OTLP http/protobuf to a loopback receiver that discards)' : 'off'}`,
    );
    const only = process.env.BENCH_ONLY; // id, tree or list
    const targets = [
      { label: `GET /system/dept-api/{id}`, path: `/system/dept-api/${prepared.ids.leaf}` },
      { label: 'GET /system/dept-api/tree', path: '/system/dept-api/tree' },
      { label: 'GET /system/dept-api/list', path: '/system/dept-api/list' },
    ].filter((target) => !only || target.label.endsWith(only === 'id' ? '{id}' : only));
    // Correctness first: both answer, and list has the same rows.
    const ours = JSON.parse((await get(service.port, '/system/dept-api/list', headers)).body).data;
    const theirs = JSON.parse((await get(baseline.port, '/system/dept-api/list', headers)).body).data;
    if (ours.length !== theirs.length) throw new Error(`list: service ${ours.length} rows, baseline ${theirs.length}`);
    const treeBytes = (await get(service.port, '/system/dept-api/tree', headers)).bytes;
    console.log(
      `${ours.length} departments; tree ${fmt(treeBytes / 1024)} KB, baseline json_agg ${fmt((await get(baseline.port, '/system/dept-api/list', headers)).bytes / 1024)} KB`,
    );

    const peaks = { service: 0, baseline: 0 };
    for (const target of targets) {
      await interleaved(target.label, { service, baseline }, peaks, (port, pid) => cannon(port, target.path, headers, SECONDS, pid));
    }
    const metrics = await stopScraping?.();
    if (metrics !== undefined) {
      // Proof that the metrics were collected: the requests the histogram counted, by route.
      const counted = [...metrics.matchAll(/^http_request_duration_seconds_count\{[^}]*route="([^"]+)"[^}]*\} (\d+)$/gm)]
        .map(([, route, n]) => `${route} ${n}`)
        .join(', ');
      console.log(`metrics: requests counted ${counted || 'none (scrapes failed?)'}`);
    }
    console.log(
      `service rss: peak ${fmt(peaks.service)} MiB under load, ${fmt(await memoryOf(service.proc.pid!, 'VmRSS'))} MiB after | ` +
        `baseline rss: peak ${fmt(peaks.baseline)} MiB under load`,
    );
    if (otlp) console.log(`traces: ${otlp.requests} exports, ${fmt(otlp.bytes / 2 ** 20, 1)} MiB received (before the service's final flush)`);
  } finally {
    await stopAll();
    await prepared.cleanup();
  }
}
