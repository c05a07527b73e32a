import { findCity } from './find-stations-by-city-district.ts';
import type { StationIndex } from './station-index.ts';

/** The city's official district names as a JSON array in Turkish order; 404 for an unknown city. */
export function getDistrictsOfCity(index: StationIndex, city: string): Buffer {
  return findCity(index, city).districtsAnswer;
}
