import { readStationDataFiles } from '../../seeds/station-data.ts';
import type { Station } from '../../src/weather-stations/station-index.ts';

/** The shipped CSV files: what the answers are checked against, independently of the index. */
export const files = readStationDataFiles();

/** The station row of stations.csv, in the API's field names. */
export function stationInFile(stationId: number): Station {
  const row = files.stations.find((s) => s.station_id === stationId);
  if (row === undefined) throw new Error(`station ${stationId} is not in stations.csv`);
  return {
    stationId: row.station_id,
    stationName: row.station_name,
    latitude: row.latitude,
    longitude: row.longitude,
    city: row.city,
    district: row.district,
  };
}

/** The stations mgm_centers.csv says serve the district (canonical spelling), ordered by id. */
export function stationsServingInFile(city: string, district: string): Station[] {
  const ids = new Set(
    files.centres
      .filter((c) => c.city === city && c.district === district && c.observation_station_id !== null)
      .map((c) => c.observation_station_id!),
  );
  return [...ids].sort((a, b) => a - b).map(stationInFile);
}

/** Every (city, district) mgm_centers.csv names for a station. */
export function districtsServedInFile(stationId: number): Array<{ city: string; district: string }> {
  return files.centres
    .filter((c) => c.observation_station_id === stationId && c.district !== '')
    .map((c) => ({ city: c.city, district: c.district }));
}

/** The cities of provinces_districts.csv in file order, which SOURCES.md says is Turkish order. */
export function citiesInFile(): string[] {
  return [...new Set(files.districts.map((d) => d.city))];
}

/** The districts of a city in file order (Turkish order). */
export function districtsInFile(city: string): string[] {
  return files.districts.filter((d) => d.city === city).map((d) => d.district);
}

/**
 * Names in the order CONTRACT.md part 7 asks for: the Unicode collation for Turkish (CLDR `tr`). The
 * files' own order agrees except that provinces_districts.csv puts "19 Mayıs" last; CLDR puts digits first.
 */
export function inTurkishOrder(names: readonly string[]): string[] {
  return [...names].sort(new Intl.Collator('tr').compare);
}
