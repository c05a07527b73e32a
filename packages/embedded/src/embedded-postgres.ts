import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { citext } from '@electric-sql/pglite/contrib/citext';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/** One embedded database, served on a local Postgres-protocol socket. */
export interface EmbeddedPostgres {
  /** What a deployable's `*_DATABASE_URL` becomes: the pg driver connects to it unchanged. */
  url: string;
  /** Where its files are kept between starts. */
  dataDir: string;
  /** Stops accepting, then closes the database so its files are consistent on disk. */
  close: () => Promise<void>;
}

/**
 * PGlite (Postgres compiled to WebAssembly) behind pglite-socket on 127.0.0.1, a free port. One per
 * service database: each service migrates its own `knex_migrations`, as with two real databases.
 * The database is PGlite's only one, `postgres`, which the local `ensureDatabaseExists` finds present.
 */
export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  mkdirSync(dataDir, { recursive: true });
  // citext: the identity schema's usernames (a contrib extension PGlite loads only when asked).
  const db = await PGlite.create({ dataDir, extensions: { citext } });
  // PGlite runs one query at a time; pglite-socket queues the connections' messages and keeps an open
  // transaction to the connection that began it, so a knex pool of several connections is safe.
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 64 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    dataDir,
    close: async () => {
      await server.stop();
      await db.close();
    },
  };
}
