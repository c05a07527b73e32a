import type { Migration } from '@platform/service-kit/database';

/**
 * The characters a screen or terminal acts on instead of showing (C0 and C1 controls, DEL, the line and
 * paragraph separators, the bidi controls), which the API refuses in names and account text since this
 * migration's release (openapi.yaml `PersonName`, `PhoneNumber`, `FreeText`, `Link`). The same set as the
 * document's pattern, as a Postgres and a JavaScript regular expression.
 */
const CONTROLS_SQL = '[\\u0001-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028-\\u202E\\u2066-\\u2069]';
const CONTROLS = new RegExp(CONTROLS_SQL, 'gu');

/** Text columns cleaned by replacing each such character with U+FFFD, which shows that something was there. */
const TEXT_COLUMNS: ReadonlyArray<[table: string, column: string]> = [
  ['users', 'first_name'],
  ['users', 'mid_name'],
  ['users', 'last_name'],
  ['accounts', 'mobile_phone_number'],
  ['accounts', 'location'],
  ['accounts', 'company'],
  ['accounts', 'industry'],
];

/** The longest profile picture URL a row may hold (0002). */
const URL_MAX = 2048;

/**
 * Rows written before the API refused those characters are cleaned, so that no client reads one from the
 * API any more (every client would otherwise have to defend itself) and every answer matches the document
 * it is validated against: names and account text get U+FFFD in place of each, a profile picture URL
 * gets it percent-encoded (as a URL spells it), or none when that no longer fits. Idempotent.
 */
export const textWithoutControls: Migration = {
  name: '0013_text_without_controls',
  up: async (db) => {
    for (const [table, column] of TEXT_COLUMNS) {
      await db.raw(`UPDATE ?? SET ?? = regexp_replace(??, ?, U&'\\FFFD', 'g') WHERE ?? ~ ?`, [table, column, column, CONTROLS_SQL, column, CONTROLS_SQL]);
    }
    const urls = (await db('accounts').where('profile_picture_url', '~', CONTROLS_SQL).select('id', 'profile_picture_url')) as Array<{ id: string; profile_picture_url: string }>;
    for (const { id, profile_picture_url: url } of urls) {
      const encoded = url.replace(CONTROLS, (char) => encodeURIComponent(char));
      await db('accounts').where({ id }).update({ profile_picture_url: encoded.length <= URL_MAX ? encoded : null });
    }
  },
  down: async () => {
    // Nothing to undo: the characters removed were never meant to be there.
  },
};
