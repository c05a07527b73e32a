import type { Migration } from '@platform/service-kit/database';
import { stationTables } from './0001_station_tables.ts';
import { stationDataVersion } from './0002_station_data_version.ts';

/** Every migration of the risk database, oldest first. Append; never edit one that has shipped. */
export const migrations: readonly Migration[] = [stationTables, stationDataVersion];
