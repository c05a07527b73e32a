import { type Logger, currentRequestLog } from '@platform/service-kit';
import { postJson } from './http-delivery.ts';

/** One e-mail (CONTRACT.md part 6: the http provider receives exactly these fields). */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends e-mail. Never throws: a failed delivery is logged and answered `false`. */
export interface Mailer {
  send(mail: Mail): Promise<boolean>;
}

export type MailerConfig =
  | { provider: 'log' }
  | { provider: 'http'; url: string; timeoutMs: number };

/**
 * The mailer the configuration names. Its lines carry the id and trace id of the request that sent the
 * mail, found in the async context: mails are sent below the use cases, often after the answer.
 */
export function createMailer(config: MailerConfig, logger: Logger): Mailer {
  if (config.provider === 'log') {
    // Local development only (config refuses it in prod): the text can carry a reset link.
    return {
      send: async (mail) => {
        currentRequestLog(logger).info({ mail: { to: mail.to, subject: mail.subject, body: mail.text } }, 'e-mail (log provider)');
        return true;
      },
    };
  }
  return {
    send: async (mail) => {
      try {
        await postJson({ url: config.url, timeoutMs: config.timeoutMs }, mail);
        currentRequestLog(logger).info({ subject: mail.subject }, 'e-mail sent');
        return true;
      } catch (err) {
        currentRequestLog(logger).warn({ subject: mail.subject, reason: (err as Error).message }, 'e-mail not sent');
        return false;
      }
    },
  };
}
