import type { Migration } from '@platform/service-kit/database';

const STATION_TABLES = ['districts', 'stations', 'mgm_centers'] as const;

/**
 * A version number every risk replica polls to know when to rebuild its in-memory index. The triggers
 * bump it inside the writing transaction, so the new value becomes visible exactly when the new rows
 * do (a sequence would not: nextval is visible before commit). Statement-level, so a bulk load bumps it
 * a handful of times rather than once per row.
 */
export const stationDataVersion: Migration = {
  name: '0002_station_data_version',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE station_data_version (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        version bigint NOT NULL,
        changed_at timestamptz NOT NULL DEFAULT now()
      );
      INSERT INTO station_data_version (version) VALUES (1);
      CREATE FUNCTION bump_station_data_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE station_data_version SET version = version + 1, changed_at = now();
        RETURN NULL;
      END
      $$;
    `);
    for (const table of STATION_TABLES) {
      await db.raw(
        `CREATE TRIGGER ?? AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ?? FOR EACH STATEMENT EXECUTE FUNCTION bump_station_data_version()`,
        [`${table}_bump_station_data_version`, table],
      );
    }
  },
  down: async (db) => {
    for (const table of STATION_TABLES) {
      await db.raw('DROP TRIGGER ?? ON ??', [`${table}_bump_station_data_version`, table]);
    }
    await db.raw('DROP FUNCTION bump_station_data_version(); DROP TABLE station_data_version;');
  },
};
