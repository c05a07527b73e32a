import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import type { StationRow } from '../src/weather-stations/weather-stations.repository.ts';
import { type CsvRecord, parseCsv } from './csv.ts';

/** The project's copy of the MGM data (data/SOURCES.md says where each file comes from). */
export const STATION_DATA_DIR = join(packageRoot(import.meta.url), 'data');

/** A row of `districts`: an official district (provinces_districts.csv). */
export interface DistrictRow {
  city: string;
  district: string;
  plate_code: number;
  latitude: number | null;
  longitude: number | null;
  mgm_merkez_id: number | null;
}

export type { StationRow } from '../src/weather-stations/weather-stations.repository.ts';

/** A row of `mgm_centers`: which observation station serves which district (mgm_centers.csv). */
export interface CentreRow {
  merkez_id: number;
  center_name: string;
  city: string;
  plate_code: number;
  district: string;
  is_district_centre: boolean;
  latitude: number;
  longitude: number;
  elevation_m: number | null;
  observation_station_id: number | null;
  daily_forecast_station_id: number | null;
  hourly_forecast_station_id: number | null;
  note: string;
}

/** The three files, parsed into table rows. */
export interface StationDataFiles {
  districts: DistrictRow[];
  stations: StationRow[];
  centres: CentreRow[];
}

/** Reads one CSV and maps each record, naming the file and line of any bad value. */
function readRows<T>(dir: string, file: string, map: (field: FieldReader) => T): T[] {
  return parseCsv(readFileSync(join(dir, file), 'utf8')).map((record, n) => {
    try {
      return map(fieldReader(record));
    } catch (err) {
      throw new Error(`${file} line ${n + 2}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  });
}

interface FieldReader {
  text(name: string): string;
  number(name: string): number;
  optionalNumber(name: string): number | null;
  integer(name: string): number;
  optionalInteger(name: string): number | null;
  boolean(name: string): boolean;
}

function fieldReader(record: CsvRecord): FieldReader {
  const text = (name: string): string => {
    const value = record[name];
    if (value === undefined) throw new Error(`no column ${name}`);
    return value;
  };
  const optionalNumber = (name: string): number | null => {
    const raw = text(name);
    if (raw === '') return null;
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new Error(`${name} is not a number: "${raw}"`);
    return value;
  };
  const optionalInteger = (name: string): number | null => {
    const value = optionalNumber(name);
    if (value !== null && !Number.isInteger(value)) throw new Error(`${name} is not an integer: ${value}`);
    return value;
  };
  const required = <T>(name: string, value: T | null): T => {
    if (value === null) throw new Error(`${name} is empty`);
    return value;
  };
  return {
    text,
    optionalNumber,
    optionalInteger,
    number: (name) => required(name, optionalNumber(name)),
    integer: (name) => required(name, optionalInteger(name)),
    boolean: (name) => {
      const raw = text(name);
      if (raw !== 'true' && raw !== 'false') throw new Error(`${name} is not true/false: "${raw}"`);
      return raw === 'true';
    },
  };
}

/** Parses the three CSV files of `dir` into table rows; throws naming the file and line of a bad value. */
export function readStationDataFiles(dir: string = STATION_DATA_DIR): StationDataFiles {
  return {
    districts: readRows(dir, 'provinces_districts.csv', (f) => ({
      city: f.text('city'),
      district: f.text('district'),
      plate_code: f.integer('plateCode'),
      latitude: f.optionalNumber('latitude'),
      longitude: f.optionalNumber('longitude'),
      mgm_merkez_id: f.optionalInteger('mgmMerkezId'),
    })),
    stations: readRows(dir, 'stations.csv', (f) => ({
      station_id: f.integer('stationId'),
      station_name: f.text('stationName'),
      latitude: f.number('latitude'),
      longitude: f.number('longitude'),
      city: f.text('city'),
      district: f.text('district'),
    })),
    centres: readRows(dir, 'mgm_centers.csv', (f) => ({
      merkez_id: f.integer('merkezId'),
      center_name: f.text('centerName'),
      city: f.text('city'),
      plate_code: f.integer('plateCode'),
      district: f.text('district'),
      is_district_centre: f.boolean('isDistrictCentre'),
      latitude: f.number('latitude'),
      longitude: f.number('longitude'),
      elevation_m: f.optionalInteger('elevationM'),
      observation_station_id: f.optionalInteger('observationStationId'),
      daily_forecast_station_id: f.optionalInteger('dailyForecastStationId'),
      hourly_forecast_station_id: f.optionalInteger('hourlyForecastStationId'),
      note: f.text('note'),
    })),
  };
}

/** How many rows each table holds after a seed. */
export interface SeedCounts {
  districts: number;
  stations: number;
  centres: number;
}

/**
 * Replaces the three station tables with the files' rows in one transaction, so running it again gives
 * the same tables, and readers (the index reloads) see either the old data or the new, never a mix.
 * An advisory lock makes two seeds started at once run one after the other instead of colliding.
 */
export async function seedStationData(db: Knex, files: StationDataFiles = readStationDataFiles()): Promise<SeedCounts> {
  await db.transaction(async (trx) => {
    await trx.raw(`SELECT pg_advisory_xact_lock(hashtext('risk:seed-station-data'))`);
    // Children first: mgm_centers refers to stations.
    await trx('mgm_centers').del();
    await trx('stations').del();
    await trx('districts').del();
    // Parents first; knex rejects an insert of no rows.
    if (files.districts.length > 0) await trx('districts').insert(files.districts);
    if (files.stations.length > 0) await trx('stations').insert(files.stations);
    if (files.centres.length > 0) await trx('mgm_centers').insert(files.centres);
  });
  return { districts: files.districts.length, stations: files.stations.length, centres: files.centres.length };
}
