import type { Logger } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import type { Mailer } from '../notifications/mailer.ts';

/** What the use cases of a password reset request need: its own file, so none of them imports another for its type. */
export interface PasswordResetDeps {
  db: Knex;
  mailer: Mailer;
  logger: Logger;
  tokenTtlS: number;
  /** Origins that reset links and post-reset redirects may point at. */
  allowedOrigins: ReadonlySet<string>;
}
