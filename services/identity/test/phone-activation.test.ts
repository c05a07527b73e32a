import assert from 'node:assert/strict';
import request from 'supertest';
import { type IdentityHarness, type TestUser, startIdentity } from './support/identity-harness.ts';
import { smsCooldownKey } from '../src/phone-activation/sms-limits.ts';

const PAGE = 'http://localhost:3000/activate-phone';

describe('phone activation', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity({ SMS_DAILY_CAP: '3', SMS_DAILY_CAP_PER_ACCOUNT: '4' });
  });
  after(async () => {
    await identity.close();
  });

  async function owner(phone: string | null = '0532 123 45 67') {
    const user = await identity.createUser();
    const [account] = await identity.db('accounts').insert({ user_id: user.id, type: 'INDIVIDUAL', mobile_phone_number: phone }).returning('id');
    return { user, accountId: account.id as string, token: (await identity.login(user)).accessToken };
  }
  const askForCode = (token: string, user: TestUser, accountId: string, link = PAGE) =>
    request(identity.app)
      .post('/v1/accounts/phone-number-activation-request')
      .set('Authorization', `Bearer ${token}`)
      .send({ userId: user.id, accountId, phoneNumberActivationPageLink: link });
  const activate = (token: string, accountId: string, code: string) =>
    request(identity.app).post('/v1/accounts/phone-number-activation').set('Authorization', `Bearer ${token}`).send({ accountId, code });
  /** The code in the last SMS sent to `to`. */
  const codeSentTo = async (to: string) => {
    await identity.sms.waitFor(1);
    const sms = identity.sms.received.filter((r) => (r.body as { to: string }).to === to).at(-1);
    assert.ok(sms, `no SMS to ${to}`);
    return /\b(\d{6})\b/.exec((sms.body as { message: string }).message)![1]!;
  };
  const uniquePhone = () => `+90532${String(Math.floor(Math.random() * 10_000_000)).padStart(7, '0')}`;
  const changeNumber = (token: string, accountId: string, mobilePhoneNumber: string) =>
    request(identity.app).patch('/v1/accounts/update').set('Authorization', `Bearer ${token}`).send({ accountId, mobilePhoneNumber });
  const verifiedState = async (accountId: string) =>
    (await identity.db('accounts').where({ id: accountId }).first('mobile_phone_number', 'mobile_phone_number_verified')) as {
      mobile_phone_number: string;
      mobile_phone_number_verified: boolean;
    };

  describe('POST /v1/accounts/phone-number-activation-request', () => {
    it('when the account has a phone, answers 200 and sends the code with the page link to the E.164 number', async () => {
      const { user, accountId, token } = await owner('0532 123 45 67');
      const before = identity.sms.received.length;
      const res = await askForCode(token, user, accountId);
      assert.equal(res.status, 200);
      const { tokenExpirationEpoch, ...rest } = res.body;
      assert.deepEqual(rest, { userId: user.id, accountId, recipientPhoneNumber: '+905321234567', smsSent: true });
      const expected = Math.floor(Date.now() / 1000) + 300;
      assert.ok(Math.abs(tokenExpirationEpoch - expected) <= 2, `expires ${tokenExpirationEpoch}, expected about ${expected} (seconds)`);

      const [sms] = (await identity.sms.waitFor(before + 1)).slice(before);
      assert.equal(sms!.method, 'POST');
      assert.equal(sms!.headers.authorization, 'Bearer sms-provider-token');
      assert.deepEqual(Object.keys(sms!.body as object).sort(), ['message', 'to']);
      const body = sms!.body as { to: string; message: string };
      assert.equal(body.to, '+905321234567');
      assert.match(body.message, /\b\d{6}\b/);
      assert.ok(body.message.includes(PAGE), body.message);
      const stored = await identity.db('accounts').where({ id: accountId }).first();
      assert.equal(stored.mobile_phone_number, '0532 123 45 67', 'the number is stored as given');
    });

    it('when the account has no phone number, answers 400 and sends nothing', async () => {
      const { user, accountId, token } = await owner(null);
      const before = identity.sms.received.length;
      const res = await askForCode(token, user, accountId);
      assert.equal(res.status, 400);
      assert.equal(res.body.message, 'The account has no mobilePhoneNumber to activate');
      assert.equal(identity.sms.received.length, before);
    });

    it('when the number is a landline or not a number, answers 400', async () => {
      for (const phone of ['0212 444 44 44', 'call me maybe']) {
        const { user, accountId, token } = await owner(phone);
        const res = await askForCode(token, user, accountId);
        assert.equal(res.status, 400, phone);
        assert.match(res.body.message, /not a valid mobile number/);
      }
    });

    it('when the page link points at a foreign origin, answers 400 (our SMS never carries a stranger\'s link)', async () => {
      const { user, accountId, token } = await owner(uniquePhone());
      const res = await askForCode(token, user, accountId, 'https://evil.example/activate');
      assert.equal(res.status, 400);
      assert.match(res.body.message, /phoneNumberActivationPageLink/);
    });

    it('when asked again within 60 s for the same account, answers 429 with Retry-After', async () => {
      const { user, accountId, token } = await owner(uniquePhone());
      assert.equal((await askForCode(token, user, accountId)).status, 200);
      const again = await askForCode(token, user, accountId);
      assert.equal(again.status, 429);
      assert.equal(again.body.message, 'Too many activation requests; try again later');
      const retryAfter = Number(again.headers['retry-after']);
      assert.ok(retryAfter > 50 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    });

    it('when one phone number reached the daily cap (3 here), answers 429 even for other accounts', async () => {
      const phone = uniquePhone();
      const answers = [];
      for (let i = 0; i < 4; i += 1) {
        const { user, accountId, token } = await owner(phone);
        answers.push(await askForCode(token, user, accountId));
      }
      assert.deepEqual(
        answers.map((res) => res.status),
        [200, 200, 200, 429],
      );
      assert.equal(answers[3]!.body.message, 'Daily SMS limit reached for this phone number');
    });

    it('when one account reached its daily cap (4 here), answers 429 whatever number it switches to', async () => {
      const { user, accountId, token } = await owner(uniquePhone());
      const statuses = [];
      for (let i = 0; i < 5; i += 1) {
        assert.equal((await changeNumber(token, accountId, uniquePhone())).status, 200);
        await identity.redis.del(smsCooldownKey(accountId));
        const res = await askForCode(token, user, accountId);
        statuses.push(res.status);
        if (res.status === 429) assert.equal(res.body.message, 'Daily SMS limit reached for this account');
      }
      assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
    });

    it('when an account hits its cap, the refused request does not use up the number\'s cap', async () => {
      const phone = uniquePhone();
      const capped = await owner(uniquePhone());
      for (let i = 0; i < 4; i += 1) {
        await changeNumber(capped.token, capped.accountId, uniquePhone());
        await identity.redis.del(smsCooldownKey(capped.accountId));
        assert.equal((await askForCode(capped.token, capped.user, capped.accountId)).status, 200);
      }
      await changeNumber(capped.token, capped.accountId, phone);
      await identity.redis.del(smsCooldownKey(capped.accountId));
      assert.equal((await askForCode(capped.token, capped.user, capped.accountId)).status, 429);
      for (let i = 0; i < 3; i += 1) {
        const other = await owner(phone);
        assert.equal((await askForCode(other.token, other.user, other.accountId)).status, 200, `the number still has ${3 - i} of 3`);
      }
    });

    it('when the SMS provider fails, answers 200 with smsSent false, the code still works and a retry is allowed at once', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      identity.sms.answerWith(503);
      try {
        const res = await askForCode(token, user, accountId);
        assert.equal(res.status, 200);
        assert.equal(res.body.smsSent, false);
      } finally {
        identity.sms.answerWith(200);
      }
      const code = await codeSentTo(phone);
      assert.equal((await activate(token, accountId, code)).status, 200, 'the code stays valid');
      assert.equal((await askForCode(token, user, accountId)).status, 200, 'no cooldown after a failed send');
    });

    it('when another user asks for a code for my account, answers 403 and sends nothing', async () => {
      const mine = await owner(uniquePhone());
      const stranger = await identity.createUser({ roles: ['POWER_USER'] });
      const before = identity.sms.received.length;
      const res = await askForCode((await identity.login(stranger)).accessToken, mine.user, mine.accountId);
      assert.equal(res.status, 403);
      assert.equal(identity.sms.received.length, before);
    });

    it('when an ADMIN asks for a code for someone\'s account, answers 200', async () => {
      const theirs = await owner(uniquePhone());
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      assert.equal((await askForCode((await identity.login(admin)).accessToken, theirs.user, theirs.accountId)).status, 200);
    });

    it('when the account is unknown or not the named user\'s, answers 404', async () => {
      const { user, token } = await owner(uniquePhone());
      assert.equal((await askForCode(token, user, '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e')).status, 404);
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const other = await owner(uniquePhone());
      assert.equal((await askForCode((await identity.login(admin)).accessToken, user, other.accountId)).status, 404);
    });
  });

  describe('POST /v1/accounts/phone-number-activation', () => {
    it('when the code is right, answers 200 with the Account verified; the same code then answers 400', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const code = await codeSentTo(phone);
      const res = await activate(token, accountId, code);
      assert.equal(res.status, 200);
      assert.equal(res.body.id, accountId);
      assert.equal(res.body.mobilePhoneNumberVerified, true);
      assert.equal(res.body.mobilePhoneNumber, phone);
      const reused = await activate(token, accountId, code);
      assert.equal(reused.status, 400);
      assert.match(reused.body.message, /No activation code is pending/);
    });

    it('when the code is wrong, answers 400; the 5th wrong code voids it, so even the right code then fails', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const code = await codeSentTo(phone);
      const wrong = code === '000000' ? '111111' : '000000';
      const messages = [];
      for (let i = 0; i < 5; i += 1) messages.push((await activate(token, accountId, wrong)).body.message);
      assert.deepEqual(messages, [...Array(4).fill('The activation code is wrong'), 'The activation code is wrong and now void; request a new one']);
      assert.equal((await activate(token, accountId, code)).status, 400);
      assert.equal((await identity.db('accounts').where({ id: accountId }).first()).mobile_phone_number_verified, false);
    });

    it('when 8 wrong codes race, counts them exactly and voids the code', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const code = await codeSentTo(phone);
      const wrong = code === '000000' ? '111111' : '000000';
      const answers = await Promise.all(Array.from({ length: 8 }, () => activate(token, accountId, wrong)));
      assert.ok(answers.every((res) => res.status === 400));
      const row = await identity.db('phone_activation_codes').where({ account_id: accountId }).first();
      assert.equal(row.failed_attempts, 5);
      assert.ok(row.voided_at instanceof Date);
    });

    it('when the code has expired, answers 400', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const code = await codeSentTo(phone);
      await identity.db('phone_activation_codes')
        .where({ account_id: accountId })
        .update({ created_at: identity.db.raw("now() - interval '10 minutes'"), expires_at: identity.db.raw("now() - interval '1 second'") });
      const res = await activate(token, accountId, code);
      assert.equal(res.status, 400);
      assert.match(res.body.message, /expired/);
    });

    it('when a newer code was requested, the older one no longer works', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const first = await codeSentTo(phone);
      await identity.redis.del(smsCooldownKey(accountId));
      await askForCode(token, user, accountId);
      const second = await codeSentTo(phone);
      if (first !== second) assert.equal((await activate(token, accountId, first)).status, 400);
      assert.equal((await activate(token, accountId, second)).status, 200);
    });

    it('when the phone number changed after the code was sent, answers 400; a verified number loses its mark when changed', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const code = await codeSentTo(phone);
      await identity.db('accounts').where({ id: accountId }).update({ mobile_phone_number: uniquePhone() });
      const [row] = await identity.db('phone_activation_codes').where({ account_id: accountId });
      assert.ok(row.voided_at !== null && row.used_at === null, 'the change itself voids the code, before any attempt');
      const res = await activate(token, accountId, code);
      assert.equal(res.status, 400);
      assert.equal(res.body.message, 'No activation code is pending; request a new one');

      await identity.db('accounts').where({ id: accountId }).update({ mobile_phone_number_verified: true });
      await identity.db('accounts').where({ id: accountId }).update({ mobile_phone_number: uniquePhone() });
      assert.equal((await identity.db('accounts').where({ id: accountId }).first()).mobile_phone_number_verified, false);
    });

    it('when the number was changed and changed back after the code went out (A → B → A, no attempt between), the code is void', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const code = await codeSentTo(phone);
      assert.equal((await changeNumber(token, accountId, uniquePhone())).status, 200);
      assert.equal((await changeNumber(token, accountId, phone)).status, 200);
      const res = await activate(token, accountId, code);
      assert.equal(res.status, 400);
      assert.equal(res.body.message, 'No activation code is pending; request a new one');
      assert.equal((await verifiedState(accountId)).mobile_phone_number_verified, false);
      // The same holds for a change made by any other path (an ADMIN's SQL, a later endpoint): the database voids it.
      await identity.redis.del(smsCooldownKey(accountId));
      await askForCode(token, user, accountId);
      const second = await codeSentTo(phone);
      await identity.db('accounts').where({ id: accountId }).update({ mobile_phone_number: uniquePhone() });
      await identity.db('accounts').where({ id: accountId }).update({ mobile_phone_number: phone });
      assert.equal((await activate(token, accountId, second)).status, 400);
    });

    it('when the number is sent again unchanged, or another field changes, the code still works', async () => {
      const phone = uniquePhone();
      const { user, accountId, token } = await owner(phone);
      await askForCode(token, user, accountId);
      const code = await codeSentTo(phone);
      assert.equal((await changeNumber(token, accountId, phone)).status, 200);
      assert.equal((await request(identity.app).patch('/v1/accounts/update').set('Authorization', `Bearer ${token}`).send({ accountId, location: 'Ankara' })).status, 200);
      assert.equal((await activate(token, accountId, code)).status, 200);
    });

    it('when the activation and a change of the number race (20 times), the new number never ends up verified', async () => {
      const outcomes: string[] = [];
      for (let i = 0; i < 20; i += 1) {
        const phone = uniquePhone();
        const { user, accountId, token } = await owner(phone);
        assert.equal((await askForCode(token, user, accountId)).status, 200);
        const code = await codeSentTo(phone);
        const other = uniquePhone();
        const [activated, changed] = await Promise.all([activate(token, accountId, code), changeNumber(token, accountId, other)]);
        assert.equal(changed.status, 200);
        const state = await verifiedState(accountId);
        assert.equal(state.mobile_phone_number, other);
        assert.equal(state.mobile_phone_number_verified, false, `try ${i}: the activation answered ${activated.status}`);
        outcomes.push(String(activated.status));
      }
      assert.ok(outcomes.every((status) => status === '200' || status === '400'), outcomes.join());
    });

    it('when a new code is asked for while the number changes (20 times), neither answers 500 and no code verifies the new number', async () => {
      for (let i = 0; i < 20; i += 1) {
        const phone = uniquePhone();
        const { user, accountId, token } = await owner(phone);
        // An open code to void: the request replaces it while the change's trigger voids it.
        assert.equal((await askForCode(token, user, accountId)).status, 200);
        await codeSentTo(phone);
        await identity.redis.del(smsCooldownKey(accountId));
        const other = uniquePhone();
        const [asked, changed] = await Promise.all([askForCode(token, user, accountId), changeNumber(token, accountId, other)]);
        assert.equal(changed.status, 200, `try ${i}: ${JSON.stringify(changed.body)}`);
        assert.equal(asked.status, 200, `try ${i}: ${JSON.stringify(asked.body)}`);
        if (asked.body.recipientPhoneNumber === phone) {
          // The code went to the old number: it must not verify the new one.
          assert.equal((await activate(token, accountId, await codeSentTo(phone))).status, 400, `try ${i}`);
          assert.equal((await verifiedState(accountId)).mobile_phone_number_verified, false, `try ${i}`);
        } else {
          // It went to the new number, asked for after the change: it verifies that one.
          assert.equal((await activate(token, accountId, await codeSentTo(other))).status, 200, `try ${i}`);
        }
      }
    });

    it('when the account number is written in another format than when the code went out, the code is void (it proves that text)', async () => {
      const { user, accountId, token } = await owner('0532 765 43 21');
      await askForCode(token, user, accountId);
      const code = await codeSentTo('+905327654321');
      assert.equal((await changeNumber(token, accountId, '+905327654321')).status, 200);
      assert.equal((await activate(token, accountId, code)).status, 400);
    });

    it('when another user sends the code, answers the 404 of an unknown account (no oracle)', async () => {
      const phone = uniquePhone();
      const mine = await owner(phone);
      await askForCode(mine.token, mine.user, mine.accountId);
      const code = await codeSentTo(phone);
      const stranger = await identity.createUser();
      assert.equal((await activate((await identity.login(stranger)).accessToken, mine.accountId, code)).status, 404);
      assert.equal((await activate(mine.token, mine.accountId, code)).status, 200, 'the refused attempt did not burn the code');
    });

    it('when the code is not 6 digits, answers 400 from the schema', async () => {
      const { accountId, token } = await owner(uniquePhone());
      assert.equal((await activate(token, accountId, '12345')).status, 400);
    });
  });

  it('never writes a code to the log or to any response', async () => {
    const phone = uniquePhone();
    const { user, accountId, token } = await owner(phone);
    const requested = await askForCode(token, user, accountId);
    const code = await codeSentTo(phone);
    const activated = await activate(token, accountId, code);
    assert.equal(activated.status, 200);
    assert.ok(!JSON.stringify(requested.body).includes(code));
    assert.ok(!JSON.stringify(activated.body).includes(code));
    assert.ok(!identity.log.text().includes(code), 'the code reached the log');
    const row = await identity.db('phone_activation_codes').where({ account_id: accountId }).first();
    assert.ok(!row.code_hmac.toString('hex').includes(Buffer.from(code).toString('hex')), 'only an HMAC is stored');
  });
});
