import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { generate } from 'otplib';
import request from 'supertest';
import type { Knex } from '@platform/service-kit/database';
import { secretBox } from '../src/factor-records/secret-box.ts';
import { TOTP_STEP_S, hotp, stepAt } from '../src/factor-records/totp.ts';
import { type IdentityHarness, duringDemotion, startIdentity, whileHeld } from './support/identity-harness.ts';

/** The claims of an access token (no check: the service checked it). */
const claimsOf = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;

/** Not within 2 s of a step's end: a code computed now is still the server's current one when it arrives. */
async function midStep(): Promise<void> {
  const into = (Date.now() / 1000) % TOTP_STEP_S;
  if (into > TOTP_STEP_S - 2) await sleep((TOTP_STEP_S - into + 0.2) * 1000);
}

/** A real authenticator's code for the secret of `otpauthUri`, at `offsetSteps` from now. */
async function codeOf(otpauthUri: string, offsetSteps = 0): Promise<string> {
  const secret = new URL(otpauthUri).searchParams.get('secret') ?? '';
  return generate({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSteps * TOTP_STEP_S });
}

describe('second factor: TOTP (CONTRACT.md part 15)', function () {
  this.timeout(60_000);

  describe('RFC 6238 appendix B (SHA-1, 8 digits, the secret "12345678901234567890")', () => {
    const secret = Buffer.from('12345678901234567890');
    for (const [time, code] of [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
      [20000000000, '65353130'],
    ] as const) {
      it(`at ${time}: ${code}`, () => {
        assert.equal(hotp(secret, stepAt(time * 1000), 8), code);
      });
    }
  });

  describe('through identity', () => {
    let identity: IdentityHarness;
    before(async () => {
      identity = await startIdentity();
    });
    after(async () => {
      await identity.close();
    });

    const as = (token: string) => ({ Authorization: `Bearer ${token}` });
    const get = (path: string, token: string) => request(identity.app).get(path).set(as(token));
    const post = (path: string, token: string, body?: object) => request(identity.app).post(path).set(as(token)).send(body ?? {});

    /** A new pending factor of the session of `token`, and a code of it good for the rest of the current step. */
    async function pendingFactor(token: string): Promise<{ factorId: string; code: string }> {
      const enrolment = await post('/v1/auth/factors/totp', token);
      assert.equal(enrolment.status, 201, JSON.stringify(enrolment.body));
      await midStep();
      return { factorId: enrolment.body.factorId as string, code: await codeOf(enrolment.body.otpauthUri) };
    }

    /**
     * A new user's confirmation of its first factor, held at the user's row (before its code is tried, as
     * every change of a user's factors waits there) while `meanwhile` runs. Resolves with the user and the answer.
     */
    async function confirmationHeldAtUser(meanwhile: (held: { trx: Knex.Transaction; owner: { accessToken: string }; factorId: string }) => Promise<void>) {
      const user = await identity.createUser();
      const owner = await identity.login(user);
      const { factorId, code } = await pendingFactor(owner.accessToken);
      const { answer } = await whileHeld(identity.db, {
        hold: (trx) => trx('users').where({ id: user.id }).forUpdate().first('id'),
        send: () => post('/v1/auth/factors/totp/confirm', owner.accessToken, { factorId, code }),
        meanwhile: (trx) => meanwhile({ trx, owner, factorId }),
        what: 'the confirmation never reached the user\'s row',
        at: 'users',
      });
      return { user, confirmed: answer };
    }

    /**
     * A confirmation of a new factor from session `confirming`, held in its transaction once it holds the
     * user's row and has activated the factor (at the insert of its recovery codes), while `during` runs; then
     * let go. Resolves with the confirmation's answer and what `during` resolved with.
     */
    async function heldConfirmation<T>(confirming: { accessToken: string }, during: () => Promise<T>): Promise<{ confirmed: request.Response; during: T }> {
      const { factorId, code } = await pendingFactor(confirming.accessToken);
      const held = await whileHeld(identity.db, {
        hold: (trx) => trx.raw('LOCK TABLE recovery_codes IN EXCLUSIVE MODE'),
        send: () => post('/v1/auth/factors/totp/confirm', confirming.accessToken, { factorId, code }),
        meanwhile: async () => {
          const racing = during();
          // Time for a request that does not wait for the confirmation to commit before it ends.
          await sleep(300);
          // In an object: returned bare, the promise would be awaited here, before the test lets go.
          return { racing };
        },
        what: 'the confirmation never reached its recovery codes',
        at: 'recovery_codes',
      });
      return { confirmed: held.answer, during: await held.meanwhile.racing };
    }

    /** The session's tokens after a refresh (a confirmation refuses the access token that made it: the client refreshes, as the SDK does). */
    async function refreshed(pair: { refreshToken: string }): Promise<{ accessToken: string; refreshToken: string }> {
      const res = await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: pair.refreshToken });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body as { accessToken: string; refreshToken: string };
    }

    /** A user with an active factor; its first session at aal 2 after confirmation (`first`: its tokens refreshed; `confirming`: those that confirmed). */
    async function enrolled(fields: Parameters<IdentityHarness['createUser']>[0] = {}) {
      const user = await identity.createUser(fields);
      const confirming = await identity.login(user);
      const enrolment = await post('/v1/auth/factors/totp', confirming.accessToken);
      assert.equal(enrolment.status, 201, JSON.stringify(enrolment.body));
      await midStep();
      const confirmed = await post('/v1/auth/factors/totp/confirm', confirming.accessToken, { factorId: enrolment.body.factorId, code: await codeOf(enrolment.body.otpauthUri) });
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      const first = await refreshed(confirming);
      return { user, first, confirming, uri: enrolment.body.otpauthUri as string, factorId: enrolment.body.factorId as string, recoveryCodes: confirmed.body.recoveryCodes as string[] };
    }

    it('enrol, confirm with an authenticator\'s code, then a login is aal 1: refused (403) but for enrolment, the sessions and the second factor, which gives an aal 2 pair', async () => {
      const { user, uri, recoveryCodes } = await enrolled();
      assert.equal(recoveryCodes.length, 10);
      assert.equal(new Set(recoveryCodes).size, 10);
      assert.match(uri, /^otpauth:\/\/totp\/Identity%20Risk%20Platform:[^?]+\?secret=[A-Z2-7]+&issuer=Identity\+Risk\+Platform&algorithm=SHA1&digits=6&period=30$/);
      const login = await identity.login(user);
      assert.deepEqual([claimsOf(login.accessToken).aal, claimsOf(login.accessToken).sfr], [1, true]);
      const refused = await get(`/v1/users/${user.id}`, login.accessToken);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.message, 'Second factor required');
      assert.equal((await get('/v1/auth/sessions', login.accessToken)).status, 200);
      const factors = await get('/v1/auth/factors', login.accessToken);
      assert.equal(factors.status, 200);
      assert.deepEqual(factors.body.items.map((f: { type: string; status: string }) => [f.type, f.status]), [['TOTP', 'ACTIVE']]);
      assert.ok(!JSON.stringify(factors.body).includes(new URL(uri).searchParams.get('secret') ?? '-'), 'the list shows the secret');
      await midStep();
      // The confirmation spent the current step: the next one's code.
      const lifted = await post('/v1/auth/second-factor', login.accessToken, { code: await codeOf(uri, 1) });
      assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
      assert.deepEqual([claimsOf(lifted.body.accessToken).aal, claimsOf(lifted.body.accessToken).sid], [2, claimsOf(login.accessToken).sid]);
      assert.equal((await get(`/v1/users/${user.id}`, lifted.body.accessToken)).status, 200);
      assert.equal((await get(`/v1/users/${user.id}`, login.accessToken)).status, 401, 'the aal 1 token lives on');
      assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: login.refreshToken })).status, 401, 'the aal 1 refresh token lives on');
      // A refresh keeps the session's level.
      const refreshed = await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: lifted.body.refreshToken });
      assert.equal(refreshed.status, 200);
      assert.equal(claimsOf(refreshed.body.accessToken).aal, 2);
      const events = (await identity.db('audit_events').where({ subject_user_id: user.id }).pluck('type')) as string[];
      for (const type of ['factor.enrolled', 'second_factor.verified']) assert.ok(events.includes(type), `no ${type}: ${events.join(', ')}`);
    });

    it('the aal 1 access token that confirmed the factor is refused from then on (401), as after the second factor; the session\'s refresh gives aal 2 tokens', async () => {
      const { user, first, confirming } = await enrolled();
      assert.deepEqual([claimsOf(confirming.accessToken).aal, claimsOf(confirming.accessToken).sfr], [1, false]);
      const old = await get(`/v1/users/${user.id}`, confirming.accessToken);
      assert.equal(old.status, 401, `the confirming aal 1 token lives on: ${JSON.stringify(old.body)}`);
      assert.equal(old.body.message, 'Bad Credentials');
      // `enrolled` refreshed the session: aal 2, the same session.
      assert.deepEqual([claimsOf(first.accessToken).aal, claimsOf(first.accessToken).sid], [2, claimsOf(confirming.accessToken).sid]);
      assert.equal((await get(`/v1/users/${user.id}`, first.accessToken)).status, 200);
    });

    it('every access token the session was given before confirming is refused from then on, not only the one presented', async () => {
      const user = await identity.createUser();
      const login = await identity.login(user);
      const second = await refreshed(login);
      const enrolment = await post('/v1/auth/factors/totp', second.accessToken);
      assert.equal(enrolment.status, 201, JSON.stringify(enrolment.body));
      await midStep();
      const confirmed = await post('/v1/auth/factors/totp/confirm', second.accessToken, { factorId: enrolment.body.factorId, code: await codeOf(enrolment.body.otpauthUri) });
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      for (const [name, token] of [['the login\'s', login.accessToken], ['the refreshed (confirming)', second.accessToken]] as const) {
        const res = await get(`/v1/users/${user.id}`, token);
        assert.equal(res.status, 401, `${name} aal 1 token lives on: ${res.status} ${JSON.stringify(res.body)}`);
      }
      const lifted = await refreshed(second);
      assert.equal(claimsOf(lifted.accessToken).aal, 2);
      assert.equal((await get(`/v1/users/${user.id}`, lifted.accessToken)).status, 200);
    });

    it('every aal 1 access token of the session is refused once it shows the second factor, not only the one presented', async () => {
      const { user, uri } = await enrolled();
      const login = await identity.login(user);
      const second = await refreshed(login);
      await midStep();
      const lifted = await post('/v1/auth/second-factor', second.accessToken, { code: await codeOf(uri, 1) });
      assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
      // The sessions list takes an aal 1 token of a user with a factor: only a revocation refuses it there.
      for (const [name, token] of [['the login\'s', login.accessToken], ['the refreshed', second.accessToken]] as const) {
        const res = await get('/v1/auth/sessions', token);
        assert.equal(res.status, 401, `${name} aal 1 token lives on: ${res.status}`);
      }
      assert.equal((await get(`/v1/users/${user.id}`, lifted.body.accessToken)).status, 200, 'the aal 2 token is refused');
    });

    it('a confirmation whose revocations Redis does not take still activates and shows the codes; they are written again from Postgres once Redis answers', async () => {
      const user = await identity.createUser();
      const login = await identity.login(user);
      const enrolment = await post('/v1/auth/factors/totp', login.accessToken);
      assert.equal(enrolment.status, 201, JSON.stringify(enrolment.body));
      const { revocations } = identity;
      const revoke = revocations.revoke.bind(revocations);
      let attempts = 0;
      revocations.revoke = async () => {
        attempts += 1;
        throw new Error('Connection is closed.');
      };
      try {
        await midStep();
        const confirmed = await post('/v1/auth/factors/totp/confirm', login.accessToken, { factorId: enrolment.body.factorId, code: await codeOf(enrolment.body.otpauthUri) });
        assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
        assert.equal(confirmed.body.recoveryCodes.length, 10);
      } finally {
        revocations.revoke = revoke;
      }
      assert.equal(attempts, 4, 'tried within the request as ended sessions are (1 + 3 retries)');
      assert.ok(identity.log.lines().some((line) => String(line.msg).startsWith('could not publish ended sessions or revoked tokens')), 'no warning');
      await identity.revocations.checkNow();
      const used = await get(`/v1/users/${user.id}`, login.accessToken);
      assert.equal(used.status, 401, `the confirming token lives on after the re-seed: ${used.status}`);
    });

    it('a refresh racing the confirmation: its token is refused or at aal 2, never one of the password alone that works', async () => {
      for (let round = 0; round < 8; round += 1) {
        const user = await identity.createUser();
        const confirming = await identity.login(user);
        const enrolment = await post('/v1/auth/factors/totp', confirming.accessToken);
        assert.equal(enrolment.status, 201, JSON.stringify(enrolment.body));
        await midStep();
        const code = await codeOf(enrolment.body.otpauthUri);
        const [confirmed, refresh] = await Promise.all([
          post('/v1/auth/factors/totp/confirm', confirming.accessToken, { factorId: enrolment.body.factorId, code }),
          request(identity.app).post('/v1/auth/refresh').send({ refreshToken: confirming.refreshToken }),
        ]);
        assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
        assert.equal(refresh.status, 200, JSON.stringify(refresh.body));
        const token = refresh.body.accessToken as string;
        const used = await get(`/v1/users/${user.id}`, token);
        assert.ok(used.status !== 200 || claimsOf(token).aal === 2, `round ${round}: the racing refresh's token (aal ${String(claimsOf(token).aal)}) answered 200`);
      }
    });

    it('a login racing the confirmation: its session ends, or its token needs the second factor', async () => {
      const user = await identity.createUser();
      const confirming = await identity.login(user);
      const enrolment = await post('/v1/auth/factors/totp', confirming.accessToken);
      assert.equal(enrolment.status, 201, JSON.stringify(enrolment.body));
      // The login is held after it read the user's factors (none active) and opened its session, before it
      // commits: at the record of its access token.
      const held = await whileHeld(identity.db, {
        hold: (trx) => trx.raw('LOCK TABLE access_tokens IN EXCLUSIVE MODE'),
        send: () => request(identity.app).post('/v1/auth/login').send({ username: user.username, password: user.password }),
        meanwhile: async () => {
          await midStep();
          const confirmation = post('/v1/auth/factors/totp/confirm', confirming.accessToken, { factorId: enrolment.body.factorId, code: await codeOf(enrolment.body.otpauthUri) }).then((res) => res);
          // Time for a confirmation that does not wait for the login to commit before it ends.
          await sleep(300);
          return { confirmation };
        },
        what: 'the login never reached the record of its token',
        at: 'access_tokens',
      });
      const [confirmed, loggedIn] = [await held.meanwhile.confirmation, held.answer];
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      assert.equal(loggedIn.status, 200, JSON.stringify(loggedIn.body));
      const used = await get(`/v1/users/${user.id}`, loggedIn.body.accessToken);
      assert.ok(used.status === 401 || used.status === 403, `the racing login's token (sfr ${String(claimsOf(loggedIn.body.accessToken).sfr)}) answered ${used.status}`);
    });

    it('a removal of the pending factor racing its confirmation waits for it: the other session it ended gets 401 and the factor stays active', async () => {
      const user = await identity.createUser();
      const owner = await identity.login(user);
      const other = await identity.login(user);
      const { confirmed, during: removal } = await heldConfirmation(owner, async () => {
        const listed = await get('/v1/auth/factors', other.accessToken);
        const factorId = listed.body.items[0]?.factorId as string;
        return await request(identity.app).delete(`/v1/auth/factors/${factorId}`).set(as(other.accessToken)).then((res) => res);
      });
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      assert.equal(removal.status, 401, `the removal answered ${removal.status}: ${JSON.stringify(removal.body)}`);
      const after = await get('/v1/auth/factors', (await refreshed(owner)).accessToken);
      assert.deepEqual(after.body.items.map((f: { status: string }) => f.status), ['ACTIVE'], 'the confirmed factor is gone');
      assert.equal(claimsOf((await identity.login(user)).accessToken).sfr, true, 'the password alone opens everything again');
    });

    it('an enrolment racing a confirmation waits for it: the other session it ended gets 401, and no pending factor stays beside the active one', async () => {
      const user = await identity.createUser();
      const owner = await identity.login(user);
      const other = await identity.login(user);
      const { confirmed, during: enrolment } = await heldConfirmation(owner, () => post('/v1/auth/factors/totp', other.accessToken).then((res) => res));
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      assert.equal(enrolment.status, 401, `the enrolment answered ${enrolment.status}: ${JSON.stringify(enrolment.body)}`);
      const after = await get('/v1/auth/factors', (await refreshed(owner)).accessToken);
      assert.deepEqual(after.body.items.map((f: { status: string }) => f.status), ['ACTIVE']);
    });

    it('a confirmation whose own session ended while it waited answers 401 and leaves the factor pending', async () => {
      const { user, confirmed } = await confirmationHeldAtUser(async ({ owner }) => {
        assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: owner.accessToken })).status, 200);
      });
      assert.equal(confirmed.status, 401, `answered ${confirmed.status}: ${JSON.stringify(confirmed.body)}`);
      assert.equal(confirmed.body.message, 'Bad Credentials');
      const factors = (await identity.db('second_factors').where({ user_id: user.id }).pluck('status')) as string[];
      assert.deepEqual(factors, ['PENDING'], 'activated from a session that had ended');
    });

    it('a second factor whose session ends while it waits spends no recovery code: the code works at the next login', async () => {
      const { user, recoveryCodes } = await enrolled();
      const login = await identity.login(user);
      const recoveryCode = recoveryCodes[0] ?? '';
      // Held at the user's row, as a role change holds it before it ends the sessions; the session ends meanwhile.
      const { answer: lifted } = await whileHeld(identity.db, {
        hold: (trx) => trx('users').where({ id: user.id }).forUpdate().first('id'),
        send: () => post('/v1/auth/second-factor', login.accessToken, { recoveryCode }),
        meanwhile: async () => {
          assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: login.accessToken })).status, 200);
        },
        what: 'the second factor never waited for the test',
      });
      assert.equal(lifted.status, 401, `answered ${lifted.status}: ${JSON.stringify(lifted.body)}`);
      const next = await identity.login(user);
      const again = await post('/v1/auth/second-factor', next.accessToken, { recoveryCode });
      assert.equal(again.status, 200, `the recovery code was spent by a second factor that answered 401: ${JSON.stringify(again.body)}`);
    });

    it('a confirmation whose pending factor a new enrolment replaced meanwhile answers as for an unknown factor: 401 Invalid code, counted', async () => {
      // The test's transaction holds the user's row, as an enrolment does, and replaces the pending factor as one does.
      const { user, confirmed } = await confirmationHeldAtUser(async ({ trx, factorId }) => {
        await trx('second_factors').where({ id: factorId }).delete();
      });
      assert.deepEqual([confirmed.status, confirmed.body.message], [401, 'Invalid code'], JSON.stringify(confirmed.body));
      const events = (await identity.db('audit_events').where({ subject_user_id: user.id }).pluck('type')) as string[];
      assert.ok(events.includes('second_factor.failed'), `not counted as a wrong code: ${events.join(', ')}`);
      assert.equal((await identity.db('users').where({ id: user.id }).first('failed_login_count')).failed_login_count, 1);
    });

    it('an unknown factor (made up, another user\'s) is answered at confirmation and removal as a wrong code of one\'s own: 401 Invalid code, counted, the fifth ends the session', async () => {
      const other = await identity.createUser();
      const othersFactor = await pendingFactor((await identity.login(other)).accessToken);
      const user = await identity.createUser();
      const session = await identity.login(user);
      const own = await pendingFactor(session.accessToken);
      const wrong = own.code === '000000' ? '000001' : '000000';
      const shape = (res: request.Response) => [res.status, res.body.error, res.body.message, res.headers['www-authenticate']];
      const attempts = [
        () => post('/v1/auth/factors/totp/confirm', session.accessToken, { factorId: own.factorId, code: wrong }),
        () => post('/v1/auth/factors/totp/confirm', session.accessToken, { factorId: randomUUID(), code: own.code }),
        () => post('/v1/auth/factors/totp/confirm', session.accessToken, { factorId: othersFactor.factorId, code: othersFactor.code }),
        () => request(identity.app).delete(`/v1/auth/factors/${othersFactor.factorId}`).set(as(session.accessToken)).send({ code: othersFactor.code }),
        () => request(identity.app).delete(`/v1/auth/factors/${randomUUID()}`).set(as(session.accessToken)).send({ recoveryCode: 'ABCD-EFGH-IJKL-MNOP' }),
      ];
      const answers: request.Response[] = [];
      for (const attempt of attempts) answers.push(await attempt());
      for (const answer of answers) assert.deepEqual(shape(answer), shape(answers[0]!), JSON.stringify(answer.body));
      assert.deepEqual(shape(answers[0]!).slice(0, 3), [401, 'Unauthorized', 'Invalid code']);
      const failures = (await identity.db('audit_events').where({ subject_user_id: user.id, type: 'second_factor.failed' }).select('id')).length;
      assert.equal(failures, 5, 'each attempt counted as a wrong code');
      assert.equal((await identity.db('users').where({ id: user.id }).first('failed_login_count')).failed_login_count, 5);
      assert.equal((await get('/v1/auth/sessions', session.accessToken)).status, 401, 'the fifth did not end the session');
      // Nothing of the other user's changed: its factor is pending and confirms with its code.
      assert.equal((await identity.db('audit_events').where({ subject_user_id: other.id, type: 'second_factor.failed' }).select('id')).length, 0);
      assert.deepEqual(await identity.db('second_factors').where({ id: othersFactor.factorId }).pluck('status'), ['PENDING']);
    });

    it('a removal with no code (the caller\'s active factor, an unknown one) answers 401 Invalid code alike and counts nothing: a faulty client cannot end its session or block its user', async () => {
      const { user, factorId, first, uri } = await enrolled();
      const shape = (res: request.Response) => [res.status, res.body.error, res.body.message, res.headers['www-authenticate']];
      const answers: request.Response[] = [];
      // Past the session's five and the user's six: none of them is counted.
      for (let i = 0; i < 4; i += 1) {
        answers.push(await request(identity.app).delete(`/v1/auth/factors/${factorId}`).set(as(first.accessToken)).send());
        answers.push(await request(identity.app).delete(`/v1/auth/factors/${randomUUID()}`).set(as(first.accessToken)));
      }
      for (const answer of answers) assert.deepEqual(shape(answer), [401, 'Unauthorized', 'Invalid code', answers[0]!.headers['www-authenticate']], JSON.stringify(answer.body));
      const events = (await identity.db('audit_events').where({ subject_user_id: user.id }).pluck('type')) as string[];
      assert.ok(!events.includes('second_factor.failed') && !events.includes('login.failed'), `counted: ${events.join(', ')}`);
      assert.equal((await identity.db('users').where({ id: user.id }).first('failed_login_count')).failed_login_count, 0);
      assert.equal((await identity.db('sessions').where({ user_id: user.id }).whereNull('revoked_at').first('second_factor_failures')).second_factor_failures, 0);
      assert.equal((await get('/v1/auth/sessions', first.accessToken)).status, 200, 'the session ended');
      assert.deepEqual(await identity.db('second_factors').where({ id: factorId }).pluck('status'), ['ACTIVE']);
      // A wrong code still counts.
      const wrongCode = (await codeOf(uri)) === '000000' ? '000001' : '000000';
      const wrong = await request(identity.app).delete(`/v1/auth/factors/${factorId}`).set(as(first.accessToken)).send({ code: wrongCode });
      assert.deepEqual(shape(wrong), shape(answers[0]!));
      assert.equal((await identity.db('users').where({ id: user.id }).first('failed_login_count')).failed_login_count, 1);
    });

    it('an aal 1 token logs out: the user who does not go on to the second factor can end the session it opened', async () => {
      const { user } = await enrolled();
      const login = await identity.login(user);
      const out = await request(identity.app).post('/v1/auth/logout').send({ jwtToken: login.accessToken });
      assert.equal(out.status, 200, JSON.stringify(out.body));
      assert.equal((await get('/v1/auth/sessions', login.accessToken)).status, 401, 'the token lives on');
      assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: login.refreshToken })).status, 401, 'the session lives on');
    });

    it('a code is used once: the same code again (or an earlier step) is 401 Invalid code; the same code twice at once is accepted once', async () => {
      const { user, uri } = await enrolled();
      await midStep();
      // The confirmation spent the current step: it cannot be shown again.
      const again = await post('/v1/auth/second-factor', (await identity.login(user)).accessToken, { code: await codeOf(uri) });
      assert.equal(again.status, 401);
      assert.equal(again.body.message, 'Invalid code');
      // The next step, twice at once with the same code: one wins.
      const [a, b] = await Promise.all([identity.login(user), identity.login(user)]);
      const next = await codeOf(uri, 1);
      const answers = await Promise.all([post('/v1/auth/second-factor', a.accessToken, { code: next }), post('/v1/auth/second-factor', b.accessToken, { code: next })]);
      // The loser used the same step (401), or, when the winner had committed before it looked, found no pending factor (404).
      const [winner, loser] = answers.map((r) => r.status).sort();
      assert.equal(winner, 200);
      assert.ok(loser === 401 || loser === 404, `the second confirmation answered ${loser}`);
      // An earlier step after a later one: refused.
      assert.equal((await post('/v1/auth/second-factor', (await identity.login(user)).accessToken, { code: await codeOf(uri) })).status, 401);
    });

    it('clock edges: a code of the previous or the next step is accepted, one of two steps back is not', async () => {
      for (const [offset, status] of [[-1, 200], [1, 200], [-2, 401], [2, 401]] as const) {
        const user = await identity.createUser();
        const session = await identity.login(user);
        const enrolment = await post('/v1/auth/factors/totp', session.accessToken);
        await midStep();
        const res = await post('/v1/auth/factors/totp/confirm', session.accessToken, { factorId: enrolment.body.factorId, code: await codeOf(enrolment.body.otpauthUri, offset) });
        assert.equal(res.status, status, `offset ${offset}: ${JSON.stringify(res.body)}`);
      }
    });

    it('a recovery code works once, in any letter case; a wrong code and a user without a factor answer alike', async () => {
      const { user, recoveryCodes } = await enrolled();
      const first = await post('/v1/auth/second-factor', (await identity.login(user)).accessToken, { recoveryCode: recoveryCodes[0]!.toLowerCase() });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const reused = await post('/v1/auth/second-factor', (await identity.login(user)).accessToken, { recoveryCode: recoveryCodes[0] });
      const wrong = await post('/v1/auth/second-factor', (await identity.login(user)).accessToken, { code: '000000' });
      const noFactor = await post('/v1/auth/second-factor', (await identity.login(await identity.createUser())).accessToken, { code: '000000' });
      const shape = (res: request.Response) => [res.status, res.body.error, res.body.message];
      assert.deepEqual(shape(reused), [401, 'Unauthorized', 'Invalid code']);
      assert.deepEqual(shape(wrong), shape(reused));
      assert.deepEqual(shape(noFactor), shape(reused));
    });

    it('codes sent at once are tried one at a time: 20 wrong codes in parallel try five, end the session and count five failed logins', async () => {
      const { user } = await enrolled();
      const login = await identity.login(user);
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post('/v1/auth/second-factor', login.accessToken, { code: String(100000 + i) })));
      assert.ok(answers.every((res) => res.status === 401 && res.body.message === 'Invalid code'), JSON.stringify(answers.map((res) => res.status)));
      const failures = (await identity.db('audit_events').where({ subject_user_id: user.id, type: 'second_factor.failed' }).pluck('details')) as Array<{ failures: number }>;
      assert.deepEqual(failures.map((details) => details.failures).sort((a, b) => a - b), [1, 2, 3, 4, 5]);
      const row = (await identity.db('users').where({ id: user.id }).first('failed_login_count')) as { failed_login_count: number };
      assert.equal(row.failed_login_count, 5);
      assert.equal((await get('/v1/auth/sessions', login.accessToken)).status, 401, 'the session ended');
    });

    it('codes sent at once from many sessions try no more than the block allows: the sixth failure blocks the user, and no code is tried after it', async () => {
      const { user, recoveryCodes } = await enrolled();
      const sessions = await Promise.all(Array.from({ length: 4 }, () => identity.login(user)));
      const answers = await Promise.all(sessions.flatMap((session, s) => Array.from({ length: 5 }, (_, i) => post('/v1/auth/second-factor', session.accessToken, { code: String(200000 + s * 10 + i) }))));
      assert.ok(answers.every((res) => res.status === 401 && res.body.message === 'Invalid code'), JSON.stringify(answers.map((res) => res.status)));
      const tried = await identity.db('audit_events').where({ subject_user_id: user.id, type: 'second_factor.failed' }).count({ n: '*' });
      assert.equal(Number(tried[0]?.n), 6, `codes tried: ${String(tried[0]?.n)}`);
      const row = (await identity.db('users').where({ id: user.id }).first('status', 'failed_login_count')) as { status: string; failed_login_count: number };
      assert.deepEqual([row.status, row.failed_login_count], ['BLOCKED', 6]);
      // A right code after the block, as a lucky guess would be: its session ended with the block.
      const late = await post('/v1/auth/second-factor', sessions[3]?.accessToken ?? '', { recoveryCode: recoveryCodes[0] ?? '' });
      assert.equal(late.status, 401);
    });

    it('an ADMIN\'s aal 1 token lists its own sessions but not another user\'s (an ADMIN power: 403 Second factor required)', async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const other = await identity.createUser();
      const { user: withFactor } = await enrolled({ roles: ['ADMIN'] });
      const login = await identity.login(withFactor);
      assert.equal((await get('/v1/auth/sessions', login.accessToken)).status, 200);
      assert.equal((await get(`/v1/auth/sessions?userId=${withFactor.id}`, login.accessToken)).status, 200, 'its own, named');
      const refused = await get(`/v1/auth/sessions?userId=${other.id}`, login.accessToken);
      assert.deepEqual([refused.status, refused.body.message], [403, 'Second factor required']);
      // An ADMIN without a factor, where none is required, keeps the power.
      assert.equal((await get(`/v1/auth/sessions?userId=${other.id}`, (await identity.login(admin)).accessToken)).status, 200);
    });

    it('a confirmation drops the enrolments started beside it: none stays pending next to the active factor', async () => {
      const user = await identity.createUser();
      const first = await identity.login(user);
      const enrolment = await post('/v1/auth/factors/totp', first.accessToken);
      assert.equal(enrolment.status, 201);
      // What two more enrolments sent at once leave: each found no pending factor to replace before it committed.
      const pending = () => ({ id: crypto.randomUUID(), user_id: user.id, type: 'TOTP', status: 'PENDING', secret: Buffer.alloc(48) });
      await identity.db('second_factors').insert([pending(), pending()]);
      await midStep();
      const confirmed = await post('/v1/auth/factors/totp/confirm', first.accessToken, { factorId: enrolment.body.factorId, code: await codeOf(enrolment.body.otpauthUri) });
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      const factors = await get('/v1/auth/factors', (await refreshed(first)).accessToken);
      assert.deepEqual(factors.body.items.map((f: { factorId: string; status: string }) => [f.factorId, f.status]), [[enrolment.body.factorId, 'ACTIVE']]);
    });

    it('five wrong codes end the session, each counted as a failed login of the user, which a password login alone does not clear', async () => {
      const { user } = await enrolled();
      const login = await identity.login(user);
      for (let i = 0; i < 5; i += 1) assert.equal((await post('/v1/auth/second-factor', login.accessToken, { code: '000000' })).status, 401);
      assert.equal((await get('/v1/auth/sessions', login.accessToken)).status, 401, 'the session outlived five wrong codes');
      const row = (await identity.db('users').where({ id: user.id }).first('failed_login_count', 'status')) as { failed_login_count: number; status: string };
      assert.equal(row.failed_login_count, 5);
      // Logging in again with the password clears nothing: the next wrong code is the sixth failure, blocked (CONTRACT.md part 4).
      assert.equal((await post('/v1/auth/second-factor', (await identity.login(user)).accessToken, { code: '000000' })).status, 401);
      assert.equal(((await identity.db('users').where({ id: user.id }).first('status')) as { status: string }).status, 'BLOCKED');
    });

    it('the secret is sealed at rest (AES-256-GCM, bound to its row): neither it nor its base32 is stored, and another key cannot open it', async () => {
      const { factorId, uri } = await enrolled();
      const row = (await identity.db('second_factors').where({ id: factorId }).first('secret')) as { secret: Buffer };
      const base32 = new URL(uri).searchParams.get('secret') ?? '';
      assert.ok(!row.secret.toString('latin1').includes(base32));
      assert.equal(secretBox(identity.config.SECOND_FACTOR_ENCRYPTION_KEY).open(row.secret, factorId).length, 20);
      assert.throws(() => secretBox('another-key-of-thirty-two-characters!!').open(row.secret, factorId));
      assert.throws(() => secretBox(identity.config.SECOND_FACTOR_ENCRYPTION_KEY).open(row.secret, 'another row'));
    });

    it('a second active factor is refused (409), and of two confirmations at once one wins', async () => {
      const { first } = await enrolled();
      const second = await post('/v1/auth/factors/totp', first.accessToken);
      assert.equal(second.status, 409);
      assert.equal(second.body.message, 'Second factor already active');
      const user = await identity.createUser();
      const session = await identity.login(user);
      const enrolment = await post('/v1/auth/factors/totp', session.accessToken);
      await midStep();
      const code = await codeOf(enrolment.body.otpauthUri);
      const answers = await Promise.all([0, 1].map(() => post('/v1/auth/factors/totp/confirm', session.accessToken, { factorId: enrolment.body.factorId, code })));
      // The second finds the factor active: 409, and no code is tried, none counted.
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409]);
      assert.equal(answers.find((r) => r.status === 409)?.body.message, 'Second factor already active');
      assert.equal((await identity.db('second_factors').where({ user_id: user.id, status: 'ACTIVE' }).select('id')).length, 1);
      const events = (await identity.db('audit_events').where({ subject_user_id: user.id }).pluck('type')) as string[];
      assert.ok(!events.includes('second_factor.failed'), `the losing confirmation was counted as a wrong code: ${events.join(', ')}`);
    });

    it('removing a factor needs a current code or a recovery code, and ends every other session; an ADMIN\'s reset ends them all', async () => {
      const { user, factorId, uri, first, recoveryCodes } = await enrolled();
      const other = await post('/v1/auth/second-factor', (await identity.login(user)).accessToken, { recoveryCode: recoveryCodes[0] });
      assert.equal(other.status, 200);
      const without = await request(identity.app).delete(`/v1/auth/factors/${factorId}`).set(as(first.accessToken)).send();
      assert.equal(without.status, 401);
      await midStep();
      const removed = await request(identity.app).delete(`/v1/auth/factors/${factorId}`).set(as(first.accessToken)).send({ code: await codeOf(uri, 1) });
      assert.equal(removed.status, 200, JSON.stringify(removed.body));
      assert.equal((await get(`/v1/users/${user.id}`, other.body.accessToken)).status, 401, 'another session outlived the removal');
      assert.equal((await get('/v1/auth/factors', first.accessToken)).body.items.length, 0);
      // An ADMIN's reset: every session of the user ends, its factors go.
      const again = await enrolled();
      const admin = await identity.tokenFor(['ADMIN']);
      const reset = await request(identity.app).delete(`/v1/users/${again.user.id}/factors`).set(as(admin));
      assert.equal(reset.status, 200);
      assert.equal((await get('/v1/auth/sessions', again.first.accessToken)).status, 401);
      assert.equal((await identity.db('second_factors').where({ user_id: again.user.id }).select('id')).length, 0);
      const notAdmin = await request(identity.app).delete(`/v1/users/${again.user.id}/factors`).set(as(await identity.tokenFor(['POWER_USER'])));
      assert.equal(notAdmin.status, 403);
    });

    it('an ADMIN\'s reset made while the ADMIN\'s own row is held (a demotion in flight) and its session ends: 401, and the user keeps its factor and sessions', async () => {
      const { user, first } = await enrolled();
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const token = (await identity.login(admin)).accessToken;
      const res = await duringDemotion(identity.db, admin.id, () => request(identity.app).delete(`/v1/users/${user.id}/factors`).set(as(token)), 'the reset never waited for the ADMIN\'s row');
      assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.message, 'Bad Credentials');
      assert.equal((await identity.db('second_factors').where({ user_id: user.id, status: 'ACTIVE' }).select('id')).length, 1, 'reset by an ADMIN demoted before it');
      assert.equal((await get('/v1/auth/sessions', first.accessToken)).status, 200, 'the user\'s sessions ended by an ADMIN demoted before it');
    });

    it('the last ADMIN\'s way back (docs/second-factor.md): the documented SQL removes its factors and records it in the audit trail', async () => {
      const { user, first } = await enrolled({ roles: ['ADMIN'] });
      const markdown = readFileSync(fileURLToPath(new URL('../../../docs/second-factor.md', import.meta.url)), 'utf8');
      const sql = /```sql\n([\s\S]*?)```/.exec(markdown)?.[1] ?? '';
      assert.match(sql, /DELETE FROM second_factors/);
      const url = (identity.db.client.config as { connection: { connectionString: string } }).connection.connectionString;
      const psql = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-v', `admin=${user.username.toUpperCase()}`, '-v', 'operator=test run'], { input: sql, encoding: 'utf8' });
      assert.equal(psql.status, 0, psql.stderr);
      assert.equal((await identity.db('second_factors').where({ user_id: user.id }).select('id')).length, 0);
      const event = (await identity.db('audit_events').where({ subject_user_id: user.id, type: 'factor.removed' }).first('details')) as { details: Record<string, unknown> };
      assert.deepEqual([event.details.by, event.details.operator], ['database', 'test run']);
      // Its session was aal 2; a login now is the password alone, asked for nothing (no factor, no required role here).
      assert.equal((await get('/v1/auth/factors', first.accessToken)).body.items.length, 0);
    });

    it('a password reset neither removes the factor nor gets past it', async () => {
      const { user } = await enrolled();
      const admin = await identity.tokenFor(['ADMIN']);
      const ticket = await post('/v1/users/password-reset-request', admin, { username: user.username });
      assert.equal(ticket.status, 201);
      const newPassword = 'a-rare-passphrase-after-reset';
      assert.equal((await request(identity.app).post('/v1/users/password-reset').send({ userId: user.id, token: ticket.body.token, newPassword })).status, 200);
      const login = await identity.login({ username: user.username, password: newPassword });
      assert.equal(claimsOf(login.accessToken).sfr, true);
      assert.equal((await get(`/v1/users/${user.id}`, login.accessToken)).status, 403);
      assert.equal((await identity.db('second_factors').where({ user_id: user.id, status: 'ACTIVE' }).select('id')).length, 1);
    });
  });

  describe('SECOND_FACTOR_REQUIRED_ROLES (ADMIN outside local)', () => {
    let identity: IdentityHarness;
    before(async () => {
      identity = await startIdentity({ SECOND_FACTOR_REQUIRED_ROLES: 'ADMIN' });
    });
    after(async () => {
      await identity.close();
    });

    it('an ADMIN without a factor: its aal 1 token opens enrolment only; once enrolled, a refresh gives aal 2 and the ADMIN\'s powers', async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const login = await identity.login(admin);
      assert.deepEqual([claimsOf(login.accessToken).aal, claimsOf(login.accessToken).sfr], [1, true]);
      const auth = { Authorization: `Bearer ${login.accessToken}` };
      const search = await request(identity.app).get('/v1/users').set(auth);
      assert.equal(search.status, 403);
      assert.equal(search.body.message, 'Second factor required');
      assert.equal((await request(identity.app).get('/v1/audit/events').set(auth)).status, 403);
      const enrolment = await request(identity.app).post('/v1/auth/factors/totp').set(auth).send({});
      assert.equal(enrolment.status, 201);
      await midStep();
      const code = await codeOf(enrolment.body.otpauthUri);
      assert.equal((await request(identity.app).post('/v1/auth/factors/totp/confirm').set(auth).send({ factorId: enrolment.body.factorId, code })).status, 200);
      const refreshed = await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: login.refreshToken });
      assert.equal(claimsOf(refreshed.body.accessToken).aal, 2);
      assert.equal((await request(identity.app).get('/v1/users').set({ Authorization: `Bearer ${refreshed.body.accessToken}` })).status, 200);
      // A user of another role is not asked for one.
      const plain = await identity.login(await identity.createUser());
      assert.equal(claimsOf(plain.accessToken).sfr, false);
    });

    it('introspects an ADMIN\'s aal 1 access token as { active: false }: to a resource server it opens nothing; a user not asked for a factor is active at aal 1', async () => {
      const introspect = (token: string) =>
        request(identity.app)
          .post('/v1/auth/introspect')
          .set(identity.viaGateway('POST', '/v1/auth/introspect', { address: '203.0.113.7', clientKeyId: 'resource-server' }))
          .type('form')
          .send({ token });
      const admin = await identity.login(await identity.createUser({ roles: ['ADMIN'] }));
      assert.deepEqual([claimsOf(admin.accessToken).aal, claimsOf(admin.accessToken).sfr], [1, true]);
      const refused = await introspect(admin.accessToken);
      assert.equal(refused.status, 200);
      assert.deepEqual(refused.body, { active: false });
      const plain = await identity.login(await identity.createUser());
      const answer = await introspect(plain.accessToken);
      assert.equal(answer.body.active, true, JSON.stringify(answer.body));
      assert.equal(answer.body.aal, 1);
    });

    it('a confirmation does not clear the user\'s failed logins: it proves a factor the caller just made, not the password', async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const login = await identity.login(admin);
      for (let i = 0; i < 4; i += 1) {
        assert.equal((await request(identity.app).post('/v1/auth/login').send({ username: admin.username, password: 'wrong-password' })).status, 401);
      }
      const count = async () => (await identity.db('users').where({ id: admin.id }).first('failed_login_count')).failed_login_count as number;
      const auth = { Authorization: `Bearer ${login.accessToken}` };
      const enrolment = await request(identity.app).post('/v1/auth/factors/totp').set(auth).send({});
      assert.equal(enrolment.status, 201);
      await midStep();
      const confirmed = await request(identity.app).post('/v1/auth/factors/totp/confirm').set(auth).send({ factorId: enrolment.body.factorId, code: await codeOf(enrolment.body.otpauthUri) });
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      assert.equal(await count(), 4, 'the confirmation cleared the failures: a bearer without the password could guess on');
      // The second factor after a password login does (the login is complete).
      const next = await identity.login(admin);
      await midStep();
      const lifted = await request(identity.app).post('/v1/auth/second-factor').set({ Authorization: `Bearer ${next.accessToken}` }).send({ code: await codeOf(enrolment.body.otpauthUri, 1) });
      assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
      assert.equal(await count(), 0);
    });
  });
});
