import { setTimeout as sleep } from 'node:timers/promises';
import type { CaptureServer } from '../../../services/identity/test/support/capture-server.ts';

/** One e-mail the mail provider stub received. */
export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
}

/** The mail (or SMS) a provider stub received, read as a person's mailbox. */
export function mailbox(provider: CaptureServer) {
  const all = () => provider.received.map((request) => request.body as ReceivedMail);
  return {
    /** Every mail sent to `to` so far. */
    to: (to: string) => all().filter((mail) => mail.to === to),
    /** The first mail to `to` whose subject matches, waiting up to 3 s for it. */
    async waitFor(to: string, subject: RegExp): Promise<ReceivedMail> {
      const deadline = Date.now() + 3000;
      for (;;) {
        const mail = all().find((m) => m.to === to && subject.test(m.subject));
        if (mail !== undefined) return mail;
        if (Date.now() > deadline) throw new Error(`no mail "${subject.source}" to ${to}`);
        await sleep(10);
      }
    },
    /** Waits until `to` has received `count` mails, up to `withinMs`; how many it has then. */
    async waitForCount(to: string, count: number, withinMs: number): Promise<number> {
      const deadline = Date.now() + withinMs;
      while (all().filter((m) => m.to === to).length < count && Date.now() <= deadline) await sleep(20);
      return all().filter((m) => m.to === to).length;
    },
  };
}

/** The 6-digit code of the last SMS to `to`, waiting up to 3 s for it. */
export async function smsCodeTo(provider: CaptureServer, to: string): Promise<string> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const sms = provider.received.filter((request) => (request.body as { to: string }).to === to).at(-1);
    const code = sms === undefined ? undefined : /\b(\d{6})\b/.exec((sms.body as { message: string }).message)?.[1];
    if (code !== undefined) return code;
    if (Date.now() > deadline) throw new Error(`no SMS to ${to}`);
    await sleep(10);
  }
}
