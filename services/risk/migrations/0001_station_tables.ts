import type { Migration } from '@platform/service-kit/database';

/**
 * The three MGM data sets of data/SOURCES.md, with their rules in the database: official districts,
 * observation stations, and the MGM centres that say which station serves which district.
 */
export const stationTables: Migration = {
  name: '0001_station_tables',
  up: async (db) => {
    await db.schema.createTable('districts', (t) => {
      t.text('city').notNullable();
      t.text('district').notNullable();
      t.smallint('plate_code').notNullable();
      t.double('latitude');
      t.double('longitude');
      t.integer('mgm_merkez_id');
      t.primary(['city', 'district']);
    });
    await db.schema.createTable('stations', (t) => {
      t.integer('station_id').primary();
      t.text('station_name').notNullable();
      t.double('latitude').notNullable();
      t.double('longitude').notNullable();
      t.text('city').notNullable();
      // "" where the source names no district (airports, ski resorts): CONTRACT.md part 7.
      t.text('district').notNullable().defaultTo('');
    });
    await db.schema.createTable('mgm_centers', (t) => {
      t.integer('merkez_id').primary();
      t.text('center_name').notNullable();
      t.text('city').notNullable();
      t.smallint('plate_code').notNullable();
      t.text('district').notNullable().defaultTo('');
      t.boolean('is_district_centre').notNullable();
      t.double('latitude').notNullable();
      t.double('longitude').notNullable();
      t.integer('elevation_m');
      t.integer('observation_station_id').references('station_id').inTable('stations');
      t.integer('daily_forecast_station_id');
      t.integer('hourly_forecast_station_id');
      t.text('note').notNullable().defaultTo('');
      t.index(['city', 'district']);
    });
    await db.raw(`
      ALTER TABLE districts
        ADD CONSTRAINT districts_plate_code_range CHECK (plate_code BETWEEN 1 AND 81),
        ADD CONSTRAINT districts_names_present CHECK (city <> '' AND district <> ''),
        ADD CONSTRAINT districts_coordinates CHECK (latitude BETWEEN -90 AND 90 AND longitude BETWEEN -180 AND 180);
      ALTER TABLE stations
        ADD CONSTRAINT stations_id_positive CHECK (station_id > 0),
        ADD CONSTRAINT stations_name_present CHECK (station_name <> '' AND city <> ''),
        ADD CONSTRAINT stations_coordinates CHECK (latitude BETWEEN -90 AND 90 AND longitude BETWEEN -180 AND 180);
      ALTER TABLE mgm_centers
        ADD CONSTRAINT mgm_centers_plate_code_range CHECK (plate_code BETWEEN 1 AND 81),
        ADD CONSTRAINT mgm_centers_coordinates CHECK (latitude BETWEEN -90 AND 90 AND longitude BETWEEN -180 AND 180);
    `);
  },
  down: async (db) => {
    await db.schema.dropTable('mgm_centers');
    await db.schema.dropTable('stations');
    await db.schema.dropTable('districts');
  },
};
