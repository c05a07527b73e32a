import { NotFoundError } from '@platform/errors';
import type { IndexedCity, IndexedDistrict, StationIndex } from './station-index.ts';

/** Used when the request names no `limit` (CONTRACT.md part 7). */
export const DEFAULT_CITY_DISTRICT_LIMIT = 10;

export interface CityDistrictQuery {
  city: string;
  district: string;
  limit: number;
}

/** The official city named (in any casing or diacritics); 404 naming what was asked for otherwise. */
export function findCity(index: StationIndex, city: string): IndexedCity {
  const found = index.city(city);
  if (found === undefined) throw new NotFoundError('City not found', { messages: [`City not found: ${city}`] });
  return found;
}

function findDistrict(city: IndexedCity, district: string): IndexedDistrict {
  const found = city.district(district);
  if (found === undefined) {
    throw new NotFoundError('District not found', { messages: [`District not found in ${city.name}: ${district}`] });
  }
  return found;
}

/**
 * The stations serving an official district as a JSON array, ordered by station id, at most `limit`.
 * A known district no station serves is an empty array; an unknown city or district is a 404.
 */
export function findStationsByCityDistrict(index: StationIndex, query: CityDistrictQuery): Buffer | string {
  const district = findDistrict(findCity(index, query.city), query.district);
  if (query.limit >= district.stationJson.length) return district.answer;
  return `[${district.stationJson.slice(0, query.limit).join(',')}]`;
}
