// `npm run bench -- [mode]`: runs one bench mode (docs/benchmark.md#running-it).
//
//   (none), latency  the department hot paths in this process (bench/dept.bench.ts)
//   load             by-id, tree and list beside the bare stack (bench/load.bench.ts)
//   big              a 100,000-department tenant, cold (bench/big.bench.ts)
//   writes           creates and moves under load beside the bare stack (bench/writes.bench.ts)
//   scale            reads across 10,000 tenants beside a near-empty database (bench/scale.bench.ts)
//   webhooks         webhook delivery and what it costs a write (bench/webhooks.bench.ts)
//   quota            quota consumes beside a bare guarded UPDATE; a package change reaching its tenants (bench/quota.bench.ts)
//
// load, big, writes, scale, quota and webhooks (its part under load) run the built service as a process: it is built first.

const mode = process.argv[2] ?? 'latency';

const run = async (): Promise<void> => {
  switch (mode) {
    case 'latency':
      return (await import('./dept.bench.js')).latency();
    case 'webhooks':
      // Its part under load runs the built service as a process.
      if (process.env.BENCH_ONLY !== 'idle') await (await import('./harness/processes.js')).buildService();
      return (await import('./webhooks.bench.js')).webhooks();
    case 'load':
    case 'big':
    case 'writes':
    case 'quota':
    case 'scale': {
      await (await import('./harness/processes.js')).buildService();
      if (mode === 'load') return (await import('./load.bench.js')).load();
      if (mode === 'big') return (await import('./big.bench.js')).big();
      if (mode === 'writes') return (await import('./writes.bench.js')).writes();
      if (mode === 'quota') return (await import('./quota.bench.js')).quota();
      return (await import('./scale.bench.js')).scale();
    }
    default:
      throw new Error(`unknown bench mode "${mode}": use latency, load, big, writes, scale, quota or webhooks`);
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
