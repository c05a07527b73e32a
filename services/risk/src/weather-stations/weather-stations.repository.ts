import type { Knex } from '@platform/service-kit/database';
import type { Station, StationData } from './station-index.ts';

/** A row of `stations` as stored (stations.csv). */
export interface StationRow {
  station_id: number;
  station_name: string;
  latitude: number;
  longitude: number;
  city: string;
  district: string;
}

/** The station data version: a trigger bumps it in the same transaction as any change to the three tables. */
export async function readStationDataVersion(db: Knex): Promise<number> {
  const row = await db('station_data_version').first<{ version: string | number } | undefined>('version');
  if (row === undefined) throw new Error('station_data_version has no row; are the migrations applied?');
  // bigint arrives as text from pg.
  return Number(row.version);
}

/**
 * The station tables and their version as one snapshot (repeatable read), so an index never mixes rows
 * from before and after a change, and the version it records is the one its rows belong to.
 */
export async function readStationData(db: Knex): Promise<StationData> {
  return db.transaction(
    async (trx) => {
      const stamp = await trx('station_data_version').first<{ version: string | number; changed_at: Date } | undefined>('version', 'changed_at');
      if (stamp === undefined) throw new Error('station_data_version has no row; are the migrations applied?');
      const [version, changedAt] = [Number(stamp.version), stamp.changed_at];
      const districts = await trx('districts').select<Array<{ city: string; district: string }>>('city', 'district');
      const stationRows = await trx('stations').select<StationRow[]>(
        'station_id',
        'station_name',
        'latitude',
        'longitude',
        'city',
        'district',
      );
      const servings = await trx('mgm_centers')
        .whereNotNull('observation_station_id')
        .andWhere('district', '<>', '')
        .select<Array<{ city: string; district: string; stationId: number }>>('city', 'district', { stationId: 'observation_station_id' });
      const stations: Station[] = stationRows.map((r) => ({
        stationId: r.station_id,
        stationName: r.station_name,
        latitude: r.latitude,
        longitude: r.longitude,
        city: r.city,
        district: r.district,
      }));
      return { version, changedAt, districts, stations, servings };
    },
    { isolationLevel: 'repeatable read', readOnly: true },
  );
}
