// The built service and the bare-stack baseline (bench/baseline.server.ts)
// started side by side on one prepared database, on two free loopback ports,
// and signed in as the platform admin.
//
// BENCH_PORT (19400): the first port tried; the service, the baseline and the service's
// management listener take the first free run of ports from it, so two runs on one
// machine never answer each other.
// BENCH_MANAGEMENT=off: the service without its management listener (on by default, as
// in the container image; load scrapes /metrics every second).
// BENCH_OTLP=1: the service with traces on (docs/operations.md#traces), sending
// them over OTLP/HTTP to a receiver in this process on loopback that reads and
// discards them; other OTEL_* variables given to the bench reach the service.
// BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the service;
// BENCH_BASELINE_NODE_ARGS the baseline.

import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { ADMIN_PASSWORD, type Prepared } from './database.js';
import { closeWithChildren, portIsFree, start, startService, waitReady, type Child } from './processes.js';

export const MANAGEMENT = process.env.BENCH_MANAGEMENT !== 'off';

interface Pair {
  service: Child;
  baseline: Child;
  /** The platform admin's bearer token, valid on both. */
  headers: Record<string, string>;
  /** The service's management listener; 0 with BENCH_MANAGEMENT=off. */
  managementPort: number;
  /** BENCH_OTLP=1: what the receiver got so far; undefined with traces off. */
  otlp?: { requests: number; bytes: number };
}

/**
 * `count` consecutive free ports from BENCH_PORT up: below the range the kernel
 * hands out for port 0, which the embedded database's loopback socket (in the
 * service and the baseline) binds to, so no port picked here is taken from
 * under the process it was picked for.
 */
async function pickPorts(count: number): Promise<number[]> {
  const from = Number(process.env.BENCH_PORT ?? 19_400);
  for (let port = from; port < from + 99; port += count) {
    const ports = Array.from({ length: count }, (_, i) => port + i);
    if ((await Promise.all(ports.map(portIsFree))).every(Boolean)) return ports;
  }
  throw new Error(`no ${count} free ports from ${from}`);
}

/** An OTLP/HTTP receiver on loopback that answers every export with success and keeps nothing but counts. */
async function startOtlpSink(): Promise<{ url: string; received: { requests: number; bytes: number } }> {
  const received = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (received.bytes += chunk.length));
    req.on('end', () => {
      received.requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  closeWithChildren(() => {
    server.closeAllConnections();
    server.close();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received };
}

const argsOf = (variable: string) => (process.env[variable] ?? '').split(' ').filter(Boolean);

export async function startBoth<W>(prepared: Prepared<W>): Promise<Pair> {
  const ports = await pickPorts(MANAGEMENT ? 3 : 2);
  const [servicePort, baselinePort, managementPort] = [ports[0]!, ports[1]!, ports[2] ?? 0];
  const sink = process.env.BENCH_OTLP === '1' ? await startOtlpSink() : undefined;
  const tracing: Record<string, string> = sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {};
  // As npm start and the image run it: node's settings come from scripts/start.sh.
  const service = startService('service', argsOf('BENCH_NODE_ARGS'), servicePort, {
    ...prepared.serviceEnv,
    ...tracing,
    MANAGEMENT_PORT: String(managementPort),
  });
  const baseline = start(
    'baseline',
    [...argsOf('BENCH_BASELINE_NODE_ARGS'), '--import', 'tsx', 'bench/baseline.server.ts'],
    baselinePort,
    prepared.baselineEnv,
  );
  await Promise.all([waitReady(service, '/readyz'), waitReady(baseline, '/system/dept-api/list')]);
  const login = await fetch(`http://127.0.0.1:${servicePort}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD }),
  });
  const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
  return { service, baseline, headers: { authorization: `Bearer ${token}` }, managementPort, otlp: sink?.received };
}

/** One GET that must answer 200, timed. */
export async function get(port: number, path: string, headers: Record<string, string>) {
  const start = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} on ${port}: ${res.status} ${body.slice(0, 200)}`);
  return { ms: performance.now() - start, bytes: Buffer.byteLength(body), body };
}

/** Scrapes /metrics every second, as a Prometheus would, until the returned function is called; it resolves to the last scrape. */
export function scrapeEverySecond(managementPort: number): () => Promise<string> {
  let last = '';
  const scrape = () =>
    fetch(`http://127.0.0.1:${managementPort}/metrics`)
      .then((res) => res.text())
      .then((text) => (last = text))
      .catch(() => undefined);
  const timer = setInterval(() => void scrape(), 1_000);
  return async () => {
    clearInterval(timer);
    await scrape();
    return last;
  };
}
