import { createLogger, loadConfigOrExit } from '@platform/service-kit';
import { connectDatabase } from '@platform/service-kit/database';
import { migrations } from '../migrations/index.ts';
import { riskConfigSpec } from './config.ts';

// `pnpm migrate` and the migration Job. It reads only the keys it needs, so the Job is not handed the
// service's secrets. With APP_ENV=local it also creates the database when missing.
const { RISK_DATABASE_URL, LOG_LEVEL } = riskConfigSpec;
const config = loadConfigOrExit({ RISK_DATABASE_URL, LOG_LEVEL }, process.env);
const logger = createLogger({ service: 'risk-migrate', level: config.LOG_LEVEL });
const db = await connectDatabase({
  appEnv: config.APP_ENV,
  migrate: true,
  url: config.RISK_DATABASE_URL,
  applicationName: 'risk-migrate',
  migrations,
  logger,
});
await db.destroy();
