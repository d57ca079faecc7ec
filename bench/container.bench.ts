import { execFileSync } from 'node:child_process';
import { fmt, median } from './harness/stats.js';

// `npm run bench -- container` (docs/benchmark.md#the-testcontainers-module):
// the service's image started through @dept-tenant/testcontainers on its
// embedded database, as a consumer's test run starts it, ROUNDS times:
// - container start to ready: from the moment the runtime started the
//   container (its StartedAt) to the service's "Server listening" log line,
//   after which /readyz answers 200 (the database is open before it listens);
// - start(): the whole call a test awaits: create, start, the port and
//   /readyz waits, the superadmin's login;
// - snapshot() and restore() with a tenant and a few departments in the data,
//   each an exec of `dept-tenant backup` / `restore` in the container.
// Needs a container engine (DOCKER_HOST as testcontainers reads it) and the
// image (DEPT_TENANT_IMAGE, default dept-tenant-service:latest). Figures only:
// nothing is asserted. BENCH_SHORT=1: two rounds.

const ROUNDS = process.env.BENCH_SHORT ? 2 : 5;

export async function container(): Promise<void> {
  // The packages as a consumer gets them: built (dist/), imported by name.
  execFileSync('npm', ['run', '--silent', 'packages'], { stdio: 'inherit' });
  const { DeptTenantContainer } = await import('@dept-tenant/testcontainers');
  const { getContainerRuntimeClient } = await import('testcontainers');
  const runtime = await getContainerRuntimeClient();
  const image = process.env.DEPT_TENANT_IMAGE ?? 'dept-tenant-service:latest';
  console.log(`container bench: ${image} on ${runtime.info.containerRuntime.host}, ${ROUNDS} rounds, embedded database`);

  const ready: number[] = [];
  const start: number[] = [];
  const snapshot: number[] = [];
  const restore: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const asked = performance.now();
    const service = await new DeptTenantContainer(image).start();
    start.push(performance.now() - asked);
    try {
      const inspected = await runtime.container.inspect(runtime.container.getById(service.getId()));
      const startedAt = Date.parse(inspected.State.StartedAt);
      const listening = await listeningAt(service);
      ready.push(listening - startedAt);

      const { client } = await service.createTenant();
      const [root] = await client.api.deptTree();
      for (const name of ['A', 'B', 'C']) await client.api.createDept({ body: { parentId: root!.deptId, deptName: name } });
      let t = performance.now();
      await service.snapshot();
      snapshot.push(performance.now() - t);
      await service.createTenant();
      t = performance.now();
      await service.restore();
      restore.push(performance.now() - t);
    } finally {
      await service.stop();
    }
    console.log(
      `  round ${round + 1}: ready ${fmt(ready.at(-1)!)} ms, start() ${fmt(start.at(-1)!)} ms, snapshot ${fmt(snapshot.at(-1)!)} ms, restore ${fmt(restore.at(-1)!)} ms`,
    );
  }
  console.log(`\nmedians over ${ROUNDS} rounds (ms):`);
  console.log(`  container start to ready   ${fmt(median(ready))}`);
  console.log(`  start() as a test awaits   ${fmt(median(start))}`);
  console.log(`  snapshot()                 ${fmt(median(snapshot))}`);
  console.log(`  restore()                  ${fmt(median(restore))}`);
}

/** The time (ms since the epoch) of the service's "Server listening" log line. */
async function listeningAt(service: { logs(): Promise<NodeJS.ReadableStream> }): Promise<number> {
  const stream = await service.logs();
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error('no "Server listening" line in the log')), 10_000);
    stream.on('data', (chunk: Buffer | string) => {
      text += chunk.toString();
      const line = text.split('\n').find((l) => l.includes('"Server listening'));
      if (!line) return;
      clearTimeout(timer);
      (stream as unknown as { destroy?: () => void }).destroy?.();
      resolve((JSON.parse(line.slice(line.indexOf('{'))) as { time: number }).time);
    });
  });
}
