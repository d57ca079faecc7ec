import cliProgress from 'cli-progress';
import type { Progress } from './ruoyi.import.js';

/**
 * The import's progress: a bar on a terminal (stderr), plain lines when the
 * output goes elsewhere (a log, CI), one at each phase's start and end and
 * at most one per tenth of it in between.
 */
export function progressFor(stream: NodeJS.WriteStream, log: (line: string) => void): Progress {
  if (stream.isTTY) {
    let bar: cliProgress.SingleBar | undefined;
    return {
      phase(name, total) {
        bar?.stop();
        bar = new cliProgress.SingleBar(
          { stream, format: `${name.padEnd(20)} [{bar}] {value}/{total}`, hideCursor: true, clearOnComplete: false },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, 0);
      },
      step: (count = 1) => bar?.increment(count),
      done() {
        bar?.stop();
        bar = undefined;
      },
    };
  }
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  let name = '';
  let total = 0;
  let value = 0;
  let shown = 0;
  return {
    phase(next, size) {
      name = next;
      total = size;
      value = 0;
      shown = 0;
      log(`${name}: 0/${total} (${elapsed()})`);
    },
    step(count = 1) {
      value += count;
      if (value === total || value - shown >= Math.max(1, Math.ceil(total / 10))) {
        shown = value;
        log(`${name}: ${value}/${total} (${elapsed()})`);
      }
    },
    done() {},
  };
}
