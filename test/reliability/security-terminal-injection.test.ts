import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isErrorBody } from '@platform/errors';
import { HOSTILE, rawHostile } from '../../packages/client/test/support/hostile-text.ts';
import { runCli } from '../../packages/client/test/support/run-cli.ts';
import { textWithoutControls } from '../../services/identity/migrations/0013_text_without_controls.ts';
import { CLIENT_KEY, type LoggedInUser, type Stack, startStack } from './support/stack.ts';

/**
 * Security review (medium): terminal escape injection into the operators' CLI. A user put ESC, CR, LF,
 * BEL or bidi controls into its own name, and `pnpm cli users find --output table` printed them raw to an
 * ADMIN's terminal: forged rows, a changed window title, reordered text. The API now refuses them in
 * every name and free-text field; the CLI escapes whatever still reaches it (the username a stranger
 * tried to log in with is kept in the audit trail as sent).
 */
describe('security: control and bidi characters never reach an operator\'s terminal, through the real stack', function () {
  this.timeout(120_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    stack = await startStack();
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  /** The characters the review named and their kin; NUL and lone surrogates have their own guard. */
  const controls: ReadonlyArray<[string, string]> = [
    ['ESC', '\u001b[2J\u001b]0;owned\u0007'],
    ['CR', 'Eve\rAdmin'],
    ['LF', 'Eve\n00000000-0000-0000-0000-000000000000  admin@example.com'],
    ['BEL', 'Eve\u0007'],
    ['TAB', 'Eve\tAdmin'],
    ['DEL', 'Eve\u007f'],
    ['C1 CSI', 'Eve\u009b2J'],
    ['NEL', 'Eve\u0085Admin'],
    ['LINE SEPARATOR', 'Eve\u2028Admin'],
    ['RLO', '\u202eevE'],
    ['LRE', 'Eve\u202a'],
    ['RLI', 'Eve\u2067x\u2069'],
    ['RLM', 'Eve\u200f'],
    ['ALM', 'Eve\u061c'],
  ];

  const newUser = (fields: Record<string, unknown> = {}) => ({
    username: `terminal-${randomUUID()}@example.com`,
    firstName: 'Eve',
    lastName: 'Hostile',
    locale: 'en_US',
    timezone: 'Europe/Istanbul',
    roles: ['STANDARD_USER'],
    status: 'ACTIVE',
    ...fields,
  });

  /** Asserts a 400 in the contract's error shape naming `field` and the rule it broke. */
  function assertRefused(res: { status: number; json: () => Record<string, unknown>; body: Buffer }, field: string, what: string, rule = 'must match pattern') {
    assert.equal(res.status, 400, `${what}: ${res.body.toString()}`);
    const body = res.json();
    assert.ok(isErrorBody(body), JSON.stringify(body));
    assert.equal(body.error, 'Bad Request');
    assert.ok(String(body.message).includes(`body.${field} ${rule}`), `${what}: ${String(body.message)}`);
  }

  it('a user created or updated with ESC, CR, LF, BEL, C1 or bidi characters in a name or username: 400 each, nothing changes', async () => {
    const self = await stack.userWith(['STANDARD_USER']);
    const before = await stack.snapshot();
    for (const [name, value] of controls) {
      for (const field of ['firstName', 'midName', 'lastName']) {
        const created = await stack.call('POST', '/v1/users/create', { bearer: admin.accessToken, body: newUser({ [field]: value }) });
        assertRefused(created, field, `create ${field} with ${name}`);
        // Its own name, by the user itself: the attack of the review.
        const updated = await stack.call('PATCH', '/v1/users/update', { bearer: self.accessToken, body: { userId: self.id, [field]: value } });
        assertRefused(updated, field, `update ${field} with ${name}`);
      }
      const username = `eve${value}@example.com`;
      // Usernames are e-mail addresses, whose format admits no such character.
      assertRefused(await stack.call('POST', '/v1/users/create', { bearer: admin.accessToken, body: newUser({ username }) }), 'username', `create username with ${name}`, 'must match format');
      assertRefused(await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: self.id, username } }), 'username', `update username with ${name}`, 'must match format');
    }
    assert.equal(await stack.snapshot(), before);
  });

  it('an account created or updated with such characters in the phone number, location, company, industry or picture URL: 400 each, nothing changes', async () => {
    const owner = await stack.userWith(['STANDARD_USER']);
    const other = await stack.userWith(['STANDARD_USER']);
    const account = await stack.call('POST', '/v1/accounts/create', { bearer: owner.accessToken, body: { userId: owner.id, type: 'INDIVIDUAL', company: 'Analytical Engines' } });
    assert.equal(account.status, 201, account.body.toString());
    const accountId = String(account.json().id);
    const before = await stack.snapshot();
    for (const [name, text] of controls) {
      // Cut to the phone number's 32 characters, so the pattern is what refuses it; each cut keeps its character.
      const value = text.slice(0, 32);
      const fields = { mobilePhoneNumber: value, location: value, company: value, industry: value, profilePictureUrl: `https://cdn.example.com/${value}` };
      for (const [field, hostile] of Object.entries(fields)) {
        const created = await stack.call('POST', '/v1/accounts/create', { bearer: other.accessToken, body: { userId: other.id, type: 'INDIVIDUAL', [field]: hostile } });
        assertRefused(created, field, `create ${field} with ${name}`);
        const updated = await stack.call('PATCH', '/v1/accounts/update', { bearer: owner.accessToken, body: { accountId, [field]: hostile } });
        assertRefused(updated, field, `update ${field} with ${name}`);
      }
    }
    assert.equal(await stack.snapshot(), before);
  });

  describe('pnpm cli, signed with the stack\'s key, printing what the API holds', () => {
    let dir: string;
    let flags: string[];

    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'terminal-injection-'));
      const tokenFile = join(dir, 'admin.json');
      writeFileSync(tokenFile, JSON.stringify({ username: admin.username, type: 'Bearer', accessToken: admin.accessToken, refreshToken: admin.refreshToken }));
      flags = ['--base-url', stack.gatewayUrl, '--key-id', CLIENT_KEY.keyId, '--secret', CLIENT_KEY.alg === 'hmac-sha256' ? CLIENT_KEY.secret : '', '--token-file', tokenFile];
    });
    after(() => {
      rmSync(dir, { recursive: true, force: true });
    });

    it('a user stored before names were checked, with every such character in its names: the upgrade cleans it, and users find prints one row, as a table and as JSON', async () => {
      // The API refuses such names now (above); rows written before it did are cleaned by migration 0013.
      const marker = randomUUID();
      const every = HOSTILE.filter(([name]) => name !== 'NUL' && name !== 'a lone surrogate').map(([, char]) => char).join('');
      const firstName = `${marker}\r\n${'0'.repeat(8)}  forged@example.com  ADMIN\u001b]0;owned\u0007${every}`;
      const body = { ...newUser({ firstName: 'Stored', lastName: 'Before' }), username: `stored-${marker}@example.com` };
      const created = await stack.call('POST', '/v1/users/create', { bearer: admin.accessToken, body });
      assert.equal(created.status, 201, created.body.toString());
      await stack.identity.db('users').where({ username: body.username }).update({ first_name: firstName });
      await textWithoutControls.up(stack.identity.db);

      const table = await runCli(['users', 'find', '--username', body.username, '--output', 'table', ...flags]);
      assert.equal(table.code, 0, table.stderr);
      assert.equal(rawHostile(table.stdout.slice(0, -1).replaceAll('\n', '')), undefined, JSON.stringify(table.stdout));
      const rows = table.stdout.trimEnd().split('\n').slice(1);
      assert.equal(rows.length, 1, `one row, no forged one: ${table.stdout}`);
      assert.ok(rows[0]!.includes(`${marker}\uFFFD\uFFFD00000000  forged@example.com  ADMIN\uFFFD]0;owned\uFFFD`), rows[0]);

      const json = await runCli(['users', 'find', '--username', body.username, ...flags]);
      assert.equal(json.code, 0, json.stderr);
      assert.equal(rawHostile(json.stdout.slice(0, -1).replaceAll('\n', '')), undefined, JSON.stringify(json.stdout));
      const users = (JSON.parse(json.stdout) as { items: Array<{ firstName?: string }> }).items;
      assert.equal(users.length, 1);
      // The characters the API refuses, by code point (openapi.yaml PersonName): each became U+FFFD.
      const refused = (c: number) => c <= 0x1f || (c >= 0x7f && c <= 0x9f) || c === 0x61c || c === 0x200e || c === 0x200f || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
      const cleaned = [...firstName].map((char) => (refused(char.codePointAt(0)!) ? '\uFFFD' : char)).join('');
      assert.deepEqual(users.map((user) => user.firstName), [cleaned], 'the JSON output means exactly what is stored');
    });

    it('a stranger\'s login with such characters in the username: the trail keeps only a digest of it, so audit prints nothing of it', async () => {
      const marker = randomUUID();
      const username = `${marker}\r\nforged\u001b]0;owned\u0007\u202e`;
      assert.equal((await stack.call('POST', '/v1/auth/login', { body: { username, password: 'wrong-password' } })).status, 401);
      const table = await runCli(['audit', '--type', 'login.failed', '--limit', '200', '--output', 'table', ...flags]);
      assert.equal(table.code, 0, table.stderr);
      assert.equal(rawHostile(table.stdout.slice(0, -1).replaceAll('\n', '')), undefined, JSON.stringify(table.stdout));
      assert.ok(!table.stdout.includes(marker), 'the username typed is not in the trail');
    });

    it('users find --output table: a user whose names passed the check (Turkish letters, an emoji) is one row, shown as sent', async () => {
      const body = newUser({ firstName: 'Ayşe 😀', lastName: 'Yılmaz' });
      assert.equal((await stack.call('POST', '/v1/users/create', { bearer: admin.accessToken, body })).status, 201);
      const run = await runCli(['users', 'find', '--q', 'terminal-', '--output', 'table', ...flags]);
      assert.equal(run.code, 0, run.stderr);
      const rows = run.stdout.trimEnd().split('\n').slice(1);
      assert.equal(rows.length, 1, `every other terminal- user was refused: ${run.stdout}`);
      assert.match(rows[0]!, new RegExp(`${body.username}\\s+Ayşe 😀\\s+Yılmaz\\s+ACTIVE\\s+STANDARD_USER$`));
    });
  });
});
