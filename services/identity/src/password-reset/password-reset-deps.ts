import type { Logger } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import type { Mailer } from '../notifications/mailer.ts';

/** What the use cases of a password reset request need: its own file, so none of them imports another for its type. */
export interface PasswordResetDeps {
  db: Knex;
  mailer: Mailer;
  logger: Logger;
  tokenTtlS: number;
  /** Reset e-mails one user may be sent per hour (PASSWORD_RESET_MAILS_PER_USER_PER_HOUR); the requests beyond are answered alike and send nothing. */
  mailsPerUserPerHour: number;
  /** Origins that reset links and post-reset redirects may point at. */
  allowedOrigins: ReadonlySet<string>;
}
