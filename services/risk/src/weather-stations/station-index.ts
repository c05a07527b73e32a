import type { components } from '@platform/client/openapi/risk';
import { greatCircleKm } from './geo-distance.ts';
import { buildSpatialIndex } from './spatial-index.ts';
import { compareTurkish, foldTurkish } from './turkish-text.ts';

/** A station as the API answers it. */
export type Station = components['schemas']['Station'];
/** A station with its distance from a requested point. */
export type StationWithDistance = components['schemas']['StationWithDistance'];

/** One consistent snapshot of the station tables: what an index is built from. */
export interface StationData {
  /** `station_data_version` at the time of the snapshot. */
  version: number;
  /** When that version was made (its `changed_at`); the build time when unknown. */
  changedAt?: Date;
  /** The official districts (city, district), canonical spelling. */
  districts: ReadonlyArray<{ city: string; district: string }>;
  stations: readonly Station[];
  /** Which station serves which district, from the MGM centres; a station may serve several. */
  servings: ReadonlyArray<{ city: string; district: string; stationId: number }>;
}

/** An official district and the stations that serve it. */
export interface IndexedDistrict {
  name: string;
  /** The serving stations' JSON, ordered by `stationId`. */
  stationJson: readonly string[];
  /** All of them as a JSON array, serialised once. */
  answer: Buffer;
}

/** An official city and its districts. */
export interface IndexedCity {
  name: string;
  /** The district names as a JSON array in Turkish order, serialised once. */
  districtsAnswer: Buffer;
  /** The district whose name folds like `name`. */
  district(name: string): IndexedDistrict | undefined;
}

/** A station and its JSON, serialised once. */
export interface IndexedStation {
  station: Station;
  answer: Buffer;
}

/** Everything the station operations read, immutable once built: a reload builds a new one and swaps it in. */
export interface StationIndex {
  version: number;
  /** `Last-Modified` of every answer from this index (CONTRACT.md part 17): when its version was made, as an HTTP date. */
  lastModified: string;
  counts: { cities: number; districts: number; stations: number };
  /** MGM centres naming a city or district that is not official: left out of the lookup, reported in the log. */
  unmatchedServings: number;
  /** The city names as a JSON array in Turkish order, serialised once. */
  citiesAnswer: Buffer;
  /** The city whose name folds like `name`. */
  city(name: string): IndexedCity | undefined;
  station(id: number): IndexedStation | undefined;
  /** The `limit` stations nearest to the point, nearest first, with their great-circle distance in km (unrounded). */
  nearest(latitude: number, longitude: number, limit: number): Array<{ station: Station; distanceKm: number }>;
}

function jsonBuffer(json: string): Buffer {
  return Buffer.from(json, 'utf8');
}

/** Key order fixed here rather than by whatever order the rows came in. */
function stationJsonOf(s: Station): string {
  const station: Station = {
    stationId: s.stationId,
    stationName: s.stationName,
    latitude: s.latitude,
    longitude: s.longitude,
    city: s.city,
    district: s.district,
  };
  return JSON.stringify(station);
}

interface CityBuilder {
  name: string;
  districts: Map<string, { name: string; stationIds: Set<number> }>;
}

function addUnique<T extends { name: string }>(map: Map<string, T>, entry: T, what: string): T {
  const key = foldTurkish(entry.name);
  const existing = map.get(key);
  if (existing === undefined) {
    map.set(key, entry);
    return entry;
  }
  if (existing.name !== entry.name) {
    // Two official names that only differ in case or diacritics would make a lookup ambiguous.
    throw new Error(`${what} "${existing.name}" and "${entry.name}" match the same spellings`);
  }
  return existing;
}

/**
 * Builds the lookup structures from one snapshot and serialises every list answer once, so a request
 * only looks up and sends bytes. Throws on data that would make lookups ambiguous.
 */
export function buildStationIndex(data: StationData): StationIndex {
  const cities = new Map<string, CityBuilder>();
  for (const row of data.districts) {
    const city = addUnique(cities, { name: row.city, districts: new Map() }, 'cities');
    addUnique(city.districts, { name: row.district, stationIds: new Set<number>() }, `districts of ${row.city}`);
  }

  const stations = new Map<number, IndexedStation & { json: string }>();
  for (const station of data.stations) {
    const json = stationJsonOf(station);
    stations.set(station.stationId, { station, json, answer: jsonBuffer(json) });
  }

  let unmatchedServings = 0;
  for (const serving of data.servings) {
    const district = cities.get(foldTurkish(serving.city))?.districts.get(foldTurkish(serving.district));
    if (district === undefined || !stations.has(serving.stationId)) unmatchedServings += 1;
    else district.stationIds.add(serving.stationId);
  }

  const indexedCities = new Map<string, IndexedCity>();
  let districtCount = 0;
  for (const [key, city] of cities) {
    const districts = new Map<string, IndexedDistrict>();
    for (const [districtKey, district] of city.districts) {
      const stationJson = [...district.stationIds].sort((a, b) => a - b).flatMap((id) => stations.get(id)?.json ?? []);
      districts.set(districtKey, { name: district.name, stationJson, answer: jsonBuffer(`[${stationJson.join(',')}]`) });
    }
    districtCount += districts.size;
    const names = [...city.districts.values()].map((d) => d.name).sort(compareTurkish);
    indexedCities.set(key, {
      name: city.name,
      districtsAnswer: jsonBuffer(JSON.stringify(names)),
      district: (name) => districts.get(foldTurkish(name)),
    });
  }

  const cityNames = [...cities.values()].map((c) => c.name).sort(compareTurkish);
  const spatial = buildSpatialIndex(data.stations.map((s) => ({ id: s.stationId, latitude: s.latitude, longitude: s.longitude })));

  return {
    version: data.version,
    lastModified: (data.changedAt ?? new Date()).toUTCString(),
    counts: { cities: cities.size, districts: districtCount, stations: stations.size },
    unmatchedServings,
    citiesAnswer: jsonBuffer(JSON.stringify(cityNames)),
    city: (name) => indexedCities.get(foldTurkish(name)),
    station: (id) => stations.get(id),
    nearest(latitude, longitude, limit) {
      return spatial.nearest(latitude, longitude, limit).flatMap((id) => {
        const station = stations.get(id)?.station;
        return station === undefined ? [] : [{ station, distanceKm: greatCircleKm(latitude, longitude, station.latitude, station.longitude) }];
      });
    },
  };
}
