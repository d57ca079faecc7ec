// Summaries of timed samples, and the order two sides take in a round, for
// every bench mode.

export const fmt = (n: number, digits = 0) => n.toFixed(digits);

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** The p-th percentile (0 to 100) of samples sorted ascending: the sample at that rank, none interpolated. */
export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** Mean, p50 and p99 of unsorted samples. */
export function summary(xs: number[]): { mean: number; p50: number; p99: number } {
  const sorted = [...xs].sort((a, b) => a - b);
  return { mean: mean(xs), p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** `a` against `b` as a signed percentage: "+7.2%". */
const change = (a: number, b: number) => `${a >= b ? '+' : ''}${(((a - b) / b) * 100).toFixed(1)}%`;

/** "p50 a vs b ms (+x%), mean a vs b ms (+y%)" of two sets of request times (ms). */
export function versus(a: number[], b: number[]): string {
  const [sa, sb] = [summary(a), summary(b)];
  return (
    `p50 ${sa.p50.toFixed(2)} vs ${sb.p50.toFixed(2)} ms (${change(sa.p50, sb.p50)}), ` +
    `mean ${sa.mean.toFixed(2)} vs ${sb.mean.toFixed(2)} ms (${change(sa.mean, sb.mean)})`
  );
}

/** The two sides of a comparison in the order round `round` runs them: alternating, so drift on a shared machine hits both alike. */
export function inTurn<T>(round: number, sides: readonly [T, T]): readonly [T, T] {
  return round % 2 === 0 ? sides : [sides[1], sides[0]];
}
