import assert from 'node:assert/strict';
import request from 'supertest';
import type { Role } from '@platform/auth';
import { type IdentityHarness, duringDemotion, startIdentity } from './support/identity-harness.ts';

const UNKNOWN_USER_ID = '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e';
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /v1/accounts/create', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const create = (token: string | undefined, body: Record<string, unknown>) => {
    const req = request(identity.app).post('/v1/accounts/create');
    if (token !== undefined) req.set('Authorization', `Bearer ${token}`);
    return req.send(body);
  };

  /** A fresh user and an access token of theirs. */
  async function signedIn(roles: Role[] = ['STANDARD_USER']) {
    const user = await identity.createUser({ roles });
    return { user, token: (await identity.login(user)).accessToken };
  }

  const accountRows = (userId: string) => identity.db('accounts').where({ user_id: userId });

  it('when the owner creates it, answers 201 with the full account, and unblock then embeds it', async () => {
    const { user, token } = await signedIn();
    const startedAt = Date.now();
    const res = await create(token, {
      userId: user.id,
      type: 'ORGANIZATION',
      mobilePhoneNumber: '+905321234567',
      location: 'Kadıköy, İstanbul',
      company: 'Analytical Engines',
      industry: 'Computing',
      profilePictureUrl: 'https://cdn.example.com/ada.png',
    });
    assert.equal(res.status, 201);
    const { id, createdAt, updatedAt, ...rest } = res.body;
    assert.deepEqual(rest, {
      userId: user.id,
      type: 'ORGANIZATION',
      subscriptionPlan: 'NONE',
      mobilePhoneNumber: '+905321234567',
      location: 'Kadıköy, İstanbul',
      company: 'Analytical Engines',
      industry: 'Computing',
      profilePictureUrl: 'https://cdn.example.com/ada.png',
      emailVerified: false,
      mobilePhoneNumberVerified: false,
    });
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.match(createdAt, ISO_INSTANT);
    assert.equal(updatedAt, createdAt);
    assert.ok(Math.abs(Date.parse(createdAt) - startedAt) < 5000, 'createdAt is the time of the create');

    const [row] = await accountRows(user.id);
    assert.equal(row.id, id);
    assert.equal(row.created_at.toISOString(), createdAt);

    await identity.db('users').where({ id: user.id }).update({ status: 'BLOCKED' });
    const unblocked = await request(identity.app).get(`/v1/users/unblock/${user.id}`).set('Authorization', `Bearer ${adminToken}`);
    assert.equal(unblocked.status, 200);
    assert.deepEqual(unblocked.body.account, res.body);
  });

  it('when only userId and type are given, answers 201 with subscriptionPlan NONE and no optional fields', async () => {
    const { user, token } = await signedIn();
    const res = await create(token, { userId: user.id, type: 'INDIVIDUAL' });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), [
      'createdAt',
      'emailVerified',
      'id',
      'mobilePhoneNumberVerified',
      'subscriptionPlan',
      'type',
      'updatedAt',
      'userId',
    ]);
    assert.equal(res.body.subscriptionPlan, 'NONE');
    assert.equal(res.body.type, 'INDIVIDUAL');
  });

  it('made for another user while the ADMIN\'s own row is held (a demotion in flight) and its session ends: 401, and no account is made', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const token = (await identity.login(admin)).accessToken;
    const user = await identity.createUser();
    const res = await duringDemotion(identity.db, admin.id, () => create(token, { userId: user.id, type: 'INDIVIDUAL', subscriptionPlan: 'PREMIUM_YEARLY' }), 'the account never waited for the ADMIN\'s row');
    assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.message, 'Bad Credentials');
    assert.equal(await identity.db('accounts').where({ user_id: user.id }).first('id'), undefined, 'made by an ADMIN demoted before it');
  });

  it('when an ADMIN creates it for another user, answers 201 with that user as owner and the given plan', async () => {
    const owner = await identity.createUser();
    const res = await create(adminToken, { userId: owner.id, type: 'INDIVIDUAL', subscriptionPlan: 'PREMIUM_YEARLY' });
    assert.equal(res.status, 201);
    assert.equal(res.body.userId, owner.id);
    assert.equal(res.body.subscriptionPlan, 'PREMIUM_YEARLY');
    const rows = await accountRows(owner.id);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].subscription_plan, 'PREMIUM_YEARLY');
  });

  for (const plan of ['BASIC_MONTHLY', 'BASIC_YEARLY', 'PREMIUM_MONTHLY', 'PREMIUM_YEARLY', 'CUSTOM']) {
    it(`when the owner chooses ${plan} for itself, answers 403 and stores nothing`, async () => {
      const { user, token } = await signedIn(['POWER_USER']);
      const res = await create(token, { userId: user.id, type: 'INDIVIDUAL', subscriptionPlan: plan });
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.error, 'Forbidden');
      assert.equal((await accountRows(user.id)).length, 0);
    });
  }

  it('when the owner chooses NONE or TRIAL, answers 201 with that plan', async () => {
    for (const subscriptionPlan of ['NONE', 'TRIAL']) {
      const { user, token } = await signedIn();
      const res = await create(token, { userId: user.id, type: 'INDIVIDUAL', subscriptionPlan });
      assert.equal(res.status, 201);
      assert.equal(res.body.subscriptionPlan, subscriptionPlan);
    }
  });

  const badPictureLinks = ['javascript:alert(document.cookie)', 'data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=', 'file:///etc/passwd', 'ftp://cdn.example.com/p.png', 'http:cdn.example.com', 'JaVaScRiPt:alert(1)'];
  for (const profilePictureUrl of badPictureLinks) {
    it(`when profilePictureUrl is ${profilePictureUrl}, answers 400 and stores nothing`, async () => {
      const { user, token } = await signedIn();
      const res = await create(token, { userId: user.id, type: 'INDIVIDUAL', profilePictureUrl });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.deepEqual(res.body.messages, ['body.profilePictureUrl must be an absolute http: or https: URL']);
      assert.equal((await accountRows(user.id)).length, 0);
    });
  }

  it('when profilePictureUrl carries a control or bidi character (the uri format lets them through), answers 400 and stores nothing', async () => {
    for (const profilePictureUrl of ['https://cdn.example.com/a\u001b]0;owned\u0007.png', 'https://cdn.example.com/\u202egnp.exe', 'https://cdn.example.com/a\u0085.png', 'https://cdn.example.com/a\u007f.png']) {
      const { user, token } = await signedIn();
      const res = await create(token, { userId: user.id, type: 'INDIVIDUAL', profilePictureUrl });
      assert.equal(res.status, 400, `${JSON.stringify(profilePictureUrl)}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.message, /body\.profilePictureUrl must match pattern/);
      assert.equal((await accountRows(user.id)).length, 0);
    }
  });

  it('when profilePictureUrl is an absolute http: or HTTPS: URL, answers 201 and keeps it as sent', async () => {
    for (const profilePictureUrl of ['http://cdn.example.com/a.png', 'HTTPS://cdn.example.com/b.png']) {
      const { user, token } = await signedIn();
      const res = await create(token, { userId: user.id, type: 'INDIVIDUAL', profilePictureUrl });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.profilePictureUrl, profilePictureUrl);
    }
  });

  it('when the user already has an account, answers 409 Account already exists and keeps the first', async () => {
    const { user, token } = await signedIn();
    assert.equal((await create(token, { userId: user.id, type: 'INDIVIDUAL', company: 'First' })).status, 201);
    const res = await create(token, { userId: user.id, type: 'ORGANIZATION', company: 'Second' });
    assert.equal(res.status, 409);
    assert.equal(res.body.error, 'Conflict');
    assert.equal(res.body.message, 'Account already exists');
    assert.equal(res.body.path, '/v1/accounts/create');
    const rows = await accountRows(user.id);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].company, 'First');
    assert.equal(rows[0].type, 'INDIVIDUAL');
  });

  it('when 10 creates for one user race, answers exactly one 201 and nine 409, and stores one account', async () => {
    const { user, token } = await signedIn();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => create(token, { userId: user.id, type: 'INDIVIDUAL', company: `Racer ${i}` })),
    );
    const statuses = answers.map((res) => res.status).sort();
    assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    const winner = answers.find((res) => res.status === 201)!;
    const rows = await accountRows(user.id);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].id, winner.body.id);
    assert.equal(rows[0].company, winner.body.company);
  });

  for (const roles of [['GUEST'], ['API_USER'], ['STANDARD_USER'], ['POWER_USER'], ['EXTENDED_USER'], ['POWER_USER', 'EXTENDED_USER']] as Role[][]) {
    it(`when a caller with roles ${roles.join('+')} creates one for another user, answers 403 Forbidden and stores nothing`, async () => {
      const victim = await identity.createUser();
      const { token } = await signedIn(roles);
      const res = await create(token, { userId: victim.id, type: 'INDIVIDUAL' });
      assert.equal(res.status, 403);
      assert.equal(res.body.error, 'Forbidden');
      assert.equal((await accountRows(victim.id)).length, 0);
    });
  }

  it('when a non-ADMIN names an unknown user, answers 403 (not 404), so it learns nothing about ids', async () => {
    const { token } = await signedIn(['POWER_USER']);
    const res = await create(token, { userId: UNKNOWN_USER_ID, type: 'INDIVIDUAL' });
    assert.equal(res.status, 403);
  });

  it('when the owner spells their id in upper case, answers 201 with the canonical userId; a urn:uuid: spelling is 400, never 500', async () => {
    const { user, token } = await signedIn();
    const res = await create(token, { userId: user.id.toUpperCase(), type: 'INDIVIDUAL' });
    assert.equal(res.status, 201);
    assert.equal(res.body.userId, user.id);
    const again = await create(adminToken, { userId: user.id.toUpperCase(), type: 'INDIVIDUAL' });
    assert.equal(again.status, 409);
    assert.equal((await create(adminToken, { userId: `urn:uuid:${user.id}`, type: 'INDIVIDUAL' })).status, 400);
    assert.equal((await accountRows(user.id)).length, 1);
  });

  it('when an ADMIN names an unknown user, answers 404 User not found', async () => {
    const res = await create(adminToken, { userId: UNKNOWN_USER_ID, type: 'INDIVIDUAL' });
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'Not Found');
    assert.equal(res.body.message, 'User not found');
  });

  it('when no token or a forged token is sent, answers 401 Bad Credentials and stores nothing', async () => {
    const user = await identity.createUser();
    for (const token of [undefined, 'not.a.jwt']) {
      const res = await create(token, { userId: user.id, type: 'INDIVIDUAL' });
      assert.equal(res.status, 401);
      assert.equal(res.body.message, 'Bad Credentials');
    }
    assert.equal((await accountRows(user.id)).length, 0);
  });

  it('when the body has an unknown field, a bad enum value, a non-uuid userId, misses type or carries a control or bidi character, answers 400 and stores nothing', async () => {
    const { user, token } = await signedIn();
    const bodies = [
      { userId: user.id, type: 'INDIVIDUAL', emailVerified: true },
      { userId: user.id, type: 'PERSONAL' },
      { userId: user.id, type: 'INDIVIDUAL', subscriptionPlan: 'GOLD' },
      { userId: 'not-a-uuid', type: 'INDIVIDUAL' },
      { userId: user.id },
      { userId: user.id, type: 'INDIVIDUAL', company: '' },
      // Control and bidi characters in the free text (a terminal or screen would act on them).
      { userId: user.id, type: 'INDIVIDUAL', company: 'Evil\u001b[2J Corp' },
      { userId: user.id, type: 'INDIVIDUAL', location: 'Ankara\r\nIstanbul' },
      { userId: user.id, type: 'INDIVIDUAL', industry: '\u202eGNINIM' },
      { userId: user.id, type: 'INDIVIDUAL', mobilePhoneNumber: '+90532\u0007123' },
      { userId: user.id, type: 'INDIVIDUAL', mobilePhoneNumber: '+90532\u2066123' },
    ];
    for (const body of bodies) {
      const res = await create(token, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'Bad Request');
      assert.ok(Array.isArray(res.body.messages) && res.body.messages.length > 0);
    }
    assert.equal((await accountRows(user.id)).length, 0);
  });
});
