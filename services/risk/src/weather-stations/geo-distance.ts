/** Mean Earth radius (IUGG), km: the sphere the great-circle distances are measured on. */
export const EARTH_RADIUS_KM = 6371.0088;

const RADIANS_PER_DEGREE = Math.PI / 180;

/** A point on the unit sphere: straight-line (chord) distance between two of them orders like great-circle distance. */
export type UnitVector = readonly [x: number, y: number, z: number];

/** Great-circle distance in km between two WGS 84 points (haversine formula, spherical Earth). */
export function greatCircleKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = (lat2 - lat1) * RADIANS_PER_DEGREE;
  const dLon = (lon2 - lon1) * RADIANS_PER_DEGREE;
  const h =
    Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * RADIANS_PER_DEGREE) * Math.cos(lat2 * RADIANS_PER_DEGREE) * Math.sin(dLon / 2) ** 2;
  // min(1, …): rounding can push h a hair above 1 for antipodal points, and asin would give NaN.
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** The unit vector of a latitude/longitude in degrees. */
export function unitVector(latitude: number, longitude: number): UnitVector {
  const lat = latitude * RADIANS_PER_DEGREE;
  const lon = longitude * RADIANS_PER_DEGREE;
  return [Math.cos(lat) * Math.cos(lon), Math.cos(lat) * Math.sin(lon), Math.sin(lat)];
}

/** Squared chord length between two unit vectors: cheap, and monotonic in great-circle distance. */
export function chordSquared(a: UnitVector, b: UnitVector): number {
  return (a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2;
}

/** Kilometres to two decimals (10 m), as answers carry them. */
export function roundKm(km: number): number {
  return Math.round(km * 100) / 100;
}
