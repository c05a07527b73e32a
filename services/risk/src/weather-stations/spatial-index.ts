import { type UnitVector, chordSquared, unitVector } from './geo-distance.ts';

/** A point to index: an id and its WGS 84 position. */
export interface SpatialPoint {
  id: number;
  latitude: number;
  longitude: number;
}

/** Finds the points nearest to a position. */
export interface SpatialIndex {
  /** Ids of the `k` points nearest to the position, nearest first; equal distances by ascending id. */
  nearest(latitude: number, longitude: number, k: number): number[];
}

interface KdNode {
  id: number;
  point: UnitVector;
  axis: 0 | 1 | 2;
  left: KdNode | undefined;
  right: KdNode | undefined;
}

interface Candidate {
  id: number;
  distance: number;
}

type Item = { id: number; point: UnitVector };

function widestAxis(items: readonly Item[]): 0 | 1 | 2 {
  let axis: 0 | 1 | 2 = 0;
  let widest = -1;
  for (const a of [0, 1, 2] as const) {
    let min = Infinity;
    let max = -Infinity;
    for (const { point } of items) {
      min = Math.min(min, point[a]);
      max = Math.max(max, point[a]);
    }
    if (max - min > widest) {
      widest = max - min;
      axis = a;
    }
  }
  return axis;
}

function build(items: Item[]): KdNode | undefined {
  const axis = widestAxis(items);
  items.sort((a, b) => a.point[axis] - b.point[axis]);
  const middle = items.length >> 1;
  const pivot = items[middle];
  if (pivot === undefined) return undefined;
  return { id: pivot.id, point: pivot.point, axis, left: build(items.slice(0, middle)), right: build(items.slice(middle + 1)) };
}

function isCloser(a: Candidate, b: Candidate): boolean {
  return a.distance < b.distance || (a.distance === b.distance && a.id < b.id);
}

/** Keeps `best` sorted and at most `k` long; k ≤ 100, so insertion into an array beats a heap. */
function consider(best: Candidate[], k: number, candidate: Candidate): void {
  const worst = best[k - 1];
  if (worst !== undefined && !isCloser(candidate, worst)) return;
  // When full, the worst is overwritten; otherwise the array grows by one.
  let i = Math.min(best.length, k - 1);
  for (let previous = best[i - 1]; previous !== undefined && isCloser(candidate, previous); previous = best[i - 1]) {
    best[i] = previous;
    i -= 1;
  }
  best[i] = candidate;
}

function search(node: KdNode | undefined, target: UnitVector, k: number, best: Candidate[]): void {
  if (node === undefined) return;
  consider(best, k, { id: node.id, distance: chordSquared(node.point, target) });
  const offset = target[node.axis] - node.point[node.axis];
  const [near, far] = offset < 0 ? [node.left, node.right] : [node.right, node.left];
  search(near, target, k, best);
  const worst = best.length < k ? undefined : best[k - 1];
  // `<=`: a point on the far side at exactly the worst distance may still win on its lower id.
  if (worst === undefined || offset * offset <= worst.distance) search(far, target, k, best);
}

/**
 * A 3-d tree over the points' unit vectors. Chord length orders points exactly as great-circle
 * distance does, so this is correct everywhere on the globe (poles, the antimeridian) with no
 * latitude/longitude special cases.
 */
export function buildSpatialIndex(points: readonly SpatialPoint[]): SpatialIndex {
  const root = build(points.map((p) => ({ id: p.id, point: unitVector(p.latitude, p.longitude) })));
  return {
    nearest(latitude, longitude, k) {
      if (k <= 0) return [];
      const best: Candidate[] = [];
      search(root, unitVector(latitude, longitude), k, best);
      return best.map((c) => c.id);
    },
  };
}
