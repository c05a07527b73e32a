import { createLogger, loadConfigOrExit } from '@platform/service-kit';
import { connectDatabase } from '@platform/service-kit/database';
import { migrations } from '../migrations/index.ts';
import { identityConfigSpec } from './config.ts';

// `pnpm migrate` and the migration Job. It reads only the keys it needs, so the Job is not handed the
// service's secrets. With APP_ENV=local it also creates the database when missing.
const { IDENTITY_DATABASE_URL, LOG_LEVEL } = identityConfigSpec;
const config = loadConfigOrExit({ IDENTITY_DATABASE_URL, LOG_LEVEL }, process.env);
const logger = createLogger({ service: 'identity-migrate', level: config.LOG_LEVEL });
const db = await connectDatabase({
  appEnv: config.APP_ENV,
  migrate: true,
  url: config.IDENTITY_DATABASE_URL,
  applicationName: 'identity-migrate',
  migrations,
  logger,
});
await db.destroy();
