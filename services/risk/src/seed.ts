import { createLogger, loadConfigOrExit } from '@platform/service-kit';
import { connectDatabase } from '@platform/service-kit/database';
import { migrations } from '../migrations/index.ts';
import { seedStationData } from '../seeds/station-data.ts';
import { riskConfigSpec } from './config.ts';

// `pnpm --filter @platform/risk seed`: loads data/*.csv into the risk database, replacing what is there.
// Running replicas pick the change up at their next index poll. Like migrate.ts it reads only the keys it
// needs; with APP_ENV=local it also creates and migrates the database first.
const { RISK_DATABASE_URL, LOG_LEVEL } = riskConfigSpec;
const config = loadConfigOrExit({ RISK_DATABASE_URL, LOG_LEVEL }, process.env);
const logger = createLogger({ service: 'risk-seed', level: config.LOG_LEVEL });
const db = await connectDatabase({
  appEnv: config.APP_ENV,
  url: config.RISK_DATABASE_URL,
  applicationName: 'risk-seed',
  migrations,
  logger,
});
try {
  logger.info(await seedStationData(db), 'station data seeded');
} catch (err) {
  logger.error({ err }, 'seeding the station data failed');
  process.exitCode = 1;
} finally {
  await db.destroy();
}
