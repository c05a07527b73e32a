import type { Mailer } from '../notifications/mailer.ts';

/**
 * Tells the old address that the username moved (CONTRACT.md part 4): if it was not the owner, the owner
 * learns it at once, while a reset mail would already go to the new address. Never awaited by the
 * request: the answer must not wait for the mail provider, which never throws.
 */
export function sendUsernameChangeNotice(mailer: Mailer, change: { firstName: string; previousUsername: string; newUsername: string }): void {
  void mailer.send({
    to: change.previousUsername,
    subject: 'Your username was changed',
    text:
      `Hello ${change.firstName},\n\nthe username of your user, ${change.previousUsername}, was changed to ${change.newUsername} ` +
      `at ${new Date().toISOString()}. From now on you log in, and password reset e-mails go, to the new address; ` +
      'every session of the user was ended.\n\nIf you did not ask for this, contact your administrator at once.\n',
  });
}
