// `npm run bench -- [mode]`: runs one bench mode (docs/benchmark.md#running-it).
//
//   (none), latency  the department hot paths in this process (bench/dept.bench.ts)
//   load             by-id, tree and list beside the bare stack (bench/load.bench.ts)
//   big              a 100,000-department tenant, cold (bench/big.bench.ts)
//   writes           creates and moves under load beside the bare stack (bench/writes.bench.ts)
//   scale            reads across 10,000 tenants beside a near-empty database (bench/scale.bench.ts)
//   webhooks         webhook delivery and what it costs a write (bench/webhooks.bench.ts)
//   quota            quota consumes beside a bare guarded UPDATE; a package change reaching its tenants (bench/quota.bench.ts)
//   citus            the same tenant's reads and writes on a Citus cluster beside one PostgreSQL (bench/citus.bench.ts)
//   ruoyi            dept-tenant import-ruoyi of 100 tenants, 100,000 departments and 100,000 people from MariaDB (bench/ruoyi.bench.ts)
//   container        the image through @dept-tenant/testcontainers: start to ready, snapshot, restore (bench/container.bench.ts)
//
// load, big, writes, scale, quota, citus, ruoyi and webhooks (its part under load) run the built service (or command) as a process: it is built first.

const mode = process.argv[2] ?? 'latency';

const run = async (): Promise<void> => {
  switch (mode) {
    case 'latency':
      return (await import('./dept.bench.js')).latency();
    case 'webhooks':
      // Its part under load runs the built service as a process.
      if (process.env.BENCH_ONLY !== 'idle') await (await import('./harness/processes.js')).buildService();
      return (await import('./webhooks.bench.js')).webhooks();
    case 'container':
      return (await import('./container.bench.js')).container();
    case 'load':
    case 'big':
    case 'writes':
    case 'quota':
    case 'citus':
    case 'ruoyi':
    case 'scale': {
      await (await import('./harness/processes.js')).buildService();
      if (mode === 'load') return (await import('./load.bench.js')).load();
      if (mode === 'big') return (await import('./big.bench.js')).big();
      if (mode === 'writes') return (await import('./writes.bench.js')).writes();
      if (mode === 'quota') return (await import('./quota.bench.js')).quota();
      if (mode === 'citus') return (await import('./citus.bench.js')).citus();
      if (mode === 'ruoyi') return (await import('./ruoyi.bench.js')).ruoyi();
      return (await import('./scale.bench.js')).scale();
    }
    default:
      throw new Error(`unknown bench mode "${mode}": use latency, load, big, writes, scale, quota, citus, ruoyi, webhooks or container`);
  }
};

// A run whose event loop empties before it finishes (a promise nothing keeps
// alive) would otherwise end with code 0 and no figures: make that a failure.
let finished = false;
process.on('exit', (code) => {
  if (!finished && code === 0) {
    console.error('bench: ended before it finished (the event loop emptied); no figures');
    process.exitCode = 1;
  }
});

run()
  .then(() => (finished = true))
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
