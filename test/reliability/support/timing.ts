// Timing comparisons of the adversarial suite (CONTRACT.md part 8: anonymous endpoints answer in the
// same time whether or not the user exists): interleaved samples, compared so a loaded machine's noise
// falls on both sides alike.

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export type Which = 'a' | 'b';

/** One measure of `abba`: the samples of a and of b, and how they compare within blocks. */
export interface Comparison {
  a: number[];
  b: number[];
  /** The median over the (a, b) pairs within a block of (a − b) / b: how much longer a takes, as a fraction. */
  shift: number;
  /** The share of those pairs in which a took longer: near 0.5 when only noise tells them apart. */
  aSlower: number;
}

/**
 * Samples a and b in blocks of four, a b b a then b a a b, so that a drift of the machine's load within a
 * block, and whatever one sample leaves to the next, falls on both alike. Only samples of one block are
 * compared, each pair as a ratio (a machine twice as busy for a while doubles both), and the pairs by
 * their median: a load spike moves a pair or two, not the verdict.
 */
export async function abba<M extends string>(blocks: number, sample: (which: Which) => Promise<Record<M, number>>): Promise<Record<M, Comparison>> {
  const samples: Array<{ which: Which; block: number; times: Record<M, number> }> = [];
  for (let block = 0; block < blocks; block += 1) {
    const order: readonly Which[] = block % 2 === 0 ? ['a', 'b', 'b', 'a'] : ['b', 'a', 'a', 'b'];
    for (const which of order) samples.push({ which, block, times: await sample(which) });
  }
  const comparisons = {} as Record<M, Comparison>;
  for (const measure of Object.keys(samples[0]!.times) as M[]) {
    const of = (which: Which, block?: number) => samples.filter((s) => s.which === which && (block === undefined || s.block === block)).map((s) => s.times[measure]);
    const pairs: Array<[number, number]> = [];
    for (let block = 0; block < blocks; block += 1) for (const x of of('a', block)) for (const y of of('b', block)) pairs.push([x, y]);
    comparisons[measure] = {
      a: of('a'),
      b: of('b'),
      shift: median(pairs.map(([x, y]) => (x - y) / y)),
      aSlower: pairs.filter(([x, y]) => x > y).length / pairs.length,
    };
  }
  return comparisons;
}

/**
 * Whether a and b are told apart: a takes longer or shorter by more than `bound` (a fraction of b), and
 * does so in most pairs. A real difference is both large and consistent; the noise of a loaded machine
 * is seldom both (a few slow samples move the size, not the share of pairs that agree).
 */
export function toldApart(comparison: Comparison, bound: number): boolean {
  return Math.abs(comparison.shift) > bound && Math.abs(comparison.aSlower - 0.5) > 0.2;
}

export const describeComparison = (c: Comparison) =>
  `median a ${median(c.a).toFixed(2)} ms, b ${median(c.b).toFixed(2)} ms; a − b ${(100 * c.shift).toFixed(1)} % of b (median of pairs), a slower in ${(100 * c.aSlower).toFixed(0)} % of pairs`;

/**
 * `measure` once, and again when the first comparison tells a and b apart (`toldApart`): the verdict is
 * the second's. A real difference shows in both; a burst of load from a test file running beside this one
 * (the machine's two cores are shared) seldom lasts through two measures. Returns every comparison made.
 */
export async function toldApartAgain(measure: () => Promise<Comparison>, bound: number): Promise<{ apart: boolean; comparisons: Comparison[] }> {
  const first = await measure();
  if (!toldApart(first, bound)) return { apart: false, comparisons: [first] };
  const second = await measure();
  return { apart: toldApart(second, bound), comparisons: [first, second] };
}
