import { type Logger, answerBudgetMs, currentRequestLog } from '@platform/service-kit';
import { postJson } from './http-delivery.ts';

/** One SMS (CONTRACT.md part 6: the http provider receives exactly `{ to, message }`). */
export interface Sms {
  /** E.164 number. */
  to: string;
  message: string;
}

/**
 * Sends SMS. Never throws: a failed delivery is logged (without the text) and answered `false`. The answer
 * of the request waits for it, so it ends by the request's deadline (`answerBudgetMs`): a code committed
 * before it is answered `smsSent: false` in time, not 504 by the gateway (whose 5xx would free the
 * idempotency key for a retry sending another code).
 */
export interface SmsSender {
  send(sms: Sms): Promise<boolean>;
}

export type SmsSenderConfig =
  | { provider: 'log' }
  | { provider: 'http'; url: string; token: string; timeoutMs: number };

/** The SMS sender the configuration names. Its lines carry the id and trace id of the request that sent the SMS. */
export function createSmsSender(config: SmsSenderConfig, logger: Logger): SmsSender {
  if (config.provider === 'log') {
    // Local development only (config refuses it in prod): the text carries the activation code.
    return {
      send: async (sms) => {
        currentRequestLog(logger).info({ sms: { to: sms.to, body: sms.message } }, 'SMS (log provider)');
        return true;
      },
    };
  }
  return {
    send: async (sms) => {
      try {
        await postJson({ url: config.url, token: config.token, timeoutMs: config.timeoutMs }, sms, answerBudgetMs());
        return true;
      } catch (err) {
        currentRequestLog(logger).warn({ reason: (err as Error).message }, 'SMS not sent');
        return false;
      }
    },
  };
}
