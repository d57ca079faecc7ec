// `npm run bench -- big`: a tenant of BENCH_BIG (100,000) departments, cold.
// The first tree and list the built service answers beside the bare-stack
// baseline's tree and json_agg of the same rows (bench/baseline.server.ts),
// cold again after each of three writes, the chart cache, list?parentId= and
// a PUT that moves the whole subtree, with the service's peak RSS. Nothing
// here asserts a time.

import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { prepare } from './harness/database.js';
import { get, startBoth } from './harness/pair.js';
import { stopAll } from './harness/processes.js';
import { memoryOf, peakRss, SHORT } from './harness/rounds.js';
import { fmt, median } from './harness/stats.js';

const BIG = Number(process.env.BENCH_BIG ?? (SHORT ? 2_000 : 100_000));

export async function big(): Promise<void> {
  const prepared = await prepare(BIG, randomBytes(32).toString('hex'));
  try {
    const { service, baseline, headers } = await startBoth(prepared);
    const pid = service.proc.pid!;
    const ours = (path: string) => get(service.port, path, headers);
    const bare = (path: string) => get(baseline.port, path, headers);
    console.log(`database: ${prepared.description}`);
    const idle = await memoryOf(pid, 'VmRSS');
    // Each first answer beside the baseline's answer of the same rows in the same shape (its tree nested, its list a json_agg).
    const bareTree = await bare('/system/dept-api/tree');
    const coldTree = await peakRss(pid, () => ours('/system/dept-api/tree'));
    const coldList = await peakRss(pid, () => ours('/system/dept-api/list'));
    const bareList = await bare('/system/dept-api/list');
    const count = JSON.parse(coldList.result.body).data.length;
    console.log(`${count} departments in the tenant; service rss ${fmt(idle)} MiB idle`);
    console.log(
      `first tree: ${fmt(coldTree.result.ms)} ms, ${fmt(coldTree.result.bytes / 2 ** 20, 1)} MiB, peak rss ${fmt(coldTree.peak)} MiB | ` +
        `first list: ${fmt(coldList.result.ms)} ms, peak rss ${fmt(coldList.peak)} MiB | baseline tree ${fmt(bareTree.ms)} ms, ${fmt(bareTree.bytes / 2 ** 20, 1)} MiB, ` +
        `json_agg ${fmt(bareList.ms)} ms, ${fmt(bareList.bytes / 2 ** 20, 1)} MiB`,
    );
    console.log(
      `first tree vs baseline tree ${fmt(coldTree.result.ms / bareTree.ms, 2)}x, first list vs baseline json_agg ${fmt(coldList.result.ms / bareList.ms, 2)}x`,
    );
    // Cold again after each write (a rename bumps the tenant's chart version), interleaved with the baseline.
    for (let round = 1; round <= (SHORT ? 1 : 3); round++) {
      const rename = await fetch(`http://127.0.0.1:${service.port}/system/dept-api`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ deptId: prepared.ids.target, parentId: 0, deptName: `Target ${round}` }),
      });
      if (rename.status !== 200) throw new Error(`rename: ${rename.status}`);
      const b = await bare('/system/dept-api/list');
      const tree = await peakRss(pid, () => ours('/system/dept-api/tree'));
      const list = await peakRss(pid, () => ours('/system/dept-api/list'));
      const b2 = await bare('/system/dept-api/tree');
      console.log(
        `after write ${round}: tree ${fmt(tree.result.ms)} ms (${fmt(tree.result.ms / b2.ms, 2)}x the baseline tree), ` +
          `list ${fmt(list.result.ms)} ms (${fmt(list.result.ms / b.ms, 2)}x the json_agg) | ` +
          `baseline tree ${fmt(b2.ms)} ms, json_agg ${fmt(b.ms)} ms | peak rss ${fmt(Math.max(tree.peak, list.peak))} MiB`,
      );
    }
    const warm = await ours('/system/dept-api/tree');
    console.log(`repeated tree (chart cache): ${fmt(warm.ms)} ms`);
    const children: number[] = [];
    for (let i = 0; i < 20; i++) children.push((await ours(`/system/dept-api/list?parentId=${prepared.ids.big}`)).ms);
    const childCount = JSON.parse((await ours(`/system/dept-api/list?parentId=${prepared.ids.big}`)).body).data.length;
    console.log(`list?parentId= (${childCount} children): first ${fmt(children[0]!, 1)} ms, median ${fmt(median(children), 1)} ms over 20`);
    const moveStart = performance.now();
    const moved = await fetch(`http://127.0.0.1:${service.port}/system/dept-api`, {
      method: 'PUT',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ deptId: prepared.ids.big, parentId: prepared.ids.target, deptName: 'Bench' }),
    });
    if (moved.status !== 200) throw new Error(`move: ${moved.status} ${await moved.text()}`);
    console.log(`move of the ${count - 2}-department subtree (PUT over HTTP): ${fmt(performance.now() - moveStart)} ms`);
    console.log(`service rss: peak ${fmt(await memoryOf(pid, 'VmHWM'))} MiB over the run, ${fmt(await memoryOf(pid, 'VmRSS'))} MiB now`);
  } finally {
    await stopAll();
    await prepared.cleanup();
  }
}
