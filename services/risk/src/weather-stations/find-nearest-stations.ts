import { roundKm } from './geo-distance.ts';
import type { StationIndex, StationWithDistance } from './station-index.ts';

/** Used when the request names no `limit` (CONTRACT.md part 7). */
export const DEFAULT_NEAREST_LIMIT = 5;

export interface NearestQuery {
  latitude: number;
  longitude: number;
  limit: number;
}

/** The `limit` stations nearest to the point by great-circle distance, nearest first, `distanceKm` to 0.01. */
export function findNearestStations(index: StationIndex, query: NearestQuery): StationWithDistance[] {
  return index.nearest(query.latitude, query.longitude, query.limit).map(({ station, distanceKm }) => ({
    ...station,
    distanceKm: roundKm(distanceKm),
  }));
}
