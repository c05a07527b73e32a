import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { generate } from 'otplib';
import { forgeJwt } from './support/forge-jwt.ts';
import { type Which, abba, describeComparison, toldApartAgain } from './support/timing.ts';
import type { Answer } from './support/raw-http.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

const STEP_S = 30;
const codeOf = (uri: string, offset = 0): Promise<string> => generate({ secret: new URL(uri).searchParams.get('secret') ?? '', epoch: Math.floor(Date.now() / 1000) + offset * STEP_S });

/** Every security alternative names the bearer token (an operation that also takes none is not in the matrix). */
const needsBearer = (security: ReadonlyArray<Record<string, unknown>>): boolean => security.length > 0 && security.every((alternative) => 'bearerAuth' in alternative);

interface Operation {
  method: string;
  template: string;
  firstFactorSuffices: boolean;
}

/**
 * CONTRACT.md part 15 attacked through the whole stack in the settings of `test` and `prod`
 * (SECOND_FACTOR_REQUIRED_ROLES=ADMIN): every operation that needs a bearer token, with an ADMIN's token of
 * the password alone (and a factor owner's), answers 403 `Second factor required` unless it is one of
 * enrolment and the second factor itself; at aal 2 none does. And the ways around it: a forged aal 2, other
 * users' factors, a code raced or replayed.
 */
describe('security: the second factor through the stack (ADMIN outside local)', function () {
  this.timeout(180_000);
  let stack: Stack;
  let operations: Operation[];

  before(async () => {
    // Failed logins allowed up to 100: the timing comparison below spends a few dozen wrong codes per user.
    stack = await startStack({ env: { SECOND_FACTOR_REQUIRED_ROLES: 'ADMIN', AUTH_MAX_FAILED_LOGINS: '100' } });
    const document = (await (await fetch(`${stack.gatewayUrl}/openapi.json`)).json()) as {
      security?: unknown[];
      paths: Record<string, Record<string, { security?: Array<Record<string, unknown>>; 'x-first-factor-suffices'?: boolean }>>;
    };
    operations = Object.entries(document.paths).flatMap(([template, item]) =>
      Object.entries(item)
        .filter(([method, op]) => ['get', 'post', 'patch', 'put', 'delete'].includes(method) && needsBearer(op.security ?? (document.security as Array<Record<string, unknown>>) ?? []))
        .map(([method, op]) => ({ method: method.toUpperCase(), template, firstFactorSuffices: op['x-first-factor-suffices'] === true })),
    );
  });
  after(async () => {
    await stack?.close();
  });

  const fill = (template: string, userId: string) => template.replace(/\{(\w+)\}/g, (_m, name: string) => ({ userId, stationId: '17130', city: 'Ankara' })[name] ?? randomUUID());
  /** Every bearer operation called with `token`: the answers that are `Second factor required`. */
  async function secondFactorRefusals(token: string, userId: string): Promise<{ refused: string[]; passed: string[] }> {
    const refused: string[] = [];
    const passed: string[] = [];
    for (const { method, template } of operations) {
      const hasBody = ['POST', 'PATCH', 'PUT'].includes(method);
      const res = await stack.call(method, fill(template, userId), { bearer: token, body: hasBody ? {} : undefined });
      assert.ok(res.status < 500, `${method} ${template}: ${res.status} ${res.body.toString()}`);
      const isRefusal = res.status === 403 && (res.json() as { message?: string }).message === 'Second factor required';
      (isRefusal ? refused : passed).push(`${method} ${template}`);
    }
    return { refused, passed };
  }
  const exempt = () => operations.filter((op) => op.firstFactorSuffices).map((op) => `${op.method} ${op.template}`).sort();
  const guarded = () => operations.filter((op) => !op.firstFactorSuffices).map((op) => `${op.method} ${op.template}`).sort();

  it('every operation × an ADMIN at aal 1: 403 Second factor required but enrolment, the second factor and the sessions list; at aal 2: never', async () => {
    assert.deepEqual(exempt(), ['DELETE /v1/auth/factors/{factorId}', 'GET /v1/auth/factors', 'GET /v1/auth/sessions', 'POST /v1/auth/factors/totp', 'POST /v1/auth/factors/totp/confirm', 'POST /v1/auth/second-factor']);
    const admin = await stack.userWith(['ADMIN']);
    const atOne = await secondFactorRefusals(admin.accessToken, admin.id);
    assert.deepEqual(atOne.refused.sort(), guarded());
    // Enrolled: the session of the confirmation is aal 2 (a refresh gives its tokens).
    const fresh = await stack.userWith(['ADMIN']);
    const enrolment = await stack.call('POST', '/v1/auth/factors/totp', { bearer: fresh.accessToken });
    assert.equal(enrolment.status, 201, enrolment.body.toString());
    const { factorId, otpauthUri } = enrolment.json() as { factorId: string; otpauthUri: string };
    assert.equal((await stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer: fresh.accessToken, body: { factorId, code: await codeOf(otpauthUri) } })).status, 200);
    const refreshed = await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: fresh.refreshToken } });
    const atTwo = await secondFactorRefusals((refreshed.json() as { accessToken: string }).accessToken, fresh.id);
    assert.deepEqual(atTwo.refused, []);
  });

  it('a STANDARD_USER who chose a factor: the same at aal 1; one without a factor is never asked', async () => {
    const owner = await stack.userWith(['STANDARD_USER']);
    const enrolment = (await stack.call('POST', '/v1/auth/factors/totp', { bearer: owner.accessToken })).json() as { factorId: string; otpauthUri: string };
    assert.equal((await stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer: owner.accessToken, body: { factorId: enrolment.factorId, code: await codeOf(enrolment.otpauthUri) } })).status, 200);
    const login = await stack.call('POST', '/v1/auth/login', { body: { username: owner.username, password: owner.password } });
    const atOne = await secondFactorRefusals((login.json() as { accessToken: string }).accessToken, owner.id);
    assert.deepEqual(atOne.refused.sort(), guarded());
    const plain = await stack.userWith(['STANDARD_USER']);
    assert.deepEqual((await secondFactorRefusals(plain.accessToken, plain.id)).refused, []);
  });

  it('a token that claims aal 2 but is signed by another key is 401 everywhere', async () => {
    const admin = await stack.userWith(['ADMIN']);
    const { generateKeyPairSync } = await import('node:crypto');
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const claims = JSON.parse(Buffer.from(admin.accessToken.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    const header = JSON.parse(Buffer.from(admin.accessToken.split('.')[0] ?? '', 'base64url').toString()) as Record<string, unknown>;
    const forged = forgeJwt(header, { ...claims, aal: 2 }, { es256: privateKey });
    assert.equal((await stack.call('GET', '/v1/users', { bearer: forged })).status, 401);
    // Direct to risk and identity: the same.
    for (const url of [`${stack.identityUrl}/v1/users`, `${stack.riskUrl}/v1/weather-stations/get-cities`]) {
      assert.equal((await fetch(url, { headers: { authorization: `Bearer ${forged}` } })).status, 401, url);
    }
  });

  it('another user\'s factor: confirmation and removal answer as for an unknown one, as a wrong code does (401 Invalid code), and change nothing of it', async () => {
    const victim = await stack.userWith(['STANDARD_USER']);
    const attacker = await stack.userWith(['STANDARD_USER']);
    const enrolment = (await stack.call('POST', '/v1/auth/factors/totp', { bearer: victim.accessToken })).json() as { factorId: string; otpauthUri: string };
    const code = await codeOf(enrolment.otpauthUri);
    const confirm = await stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer: attacker.accessToken, body: { factorId: enrolment.factorId, code } });
    const unknown = await stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer: attacker.accessToken, body: { factorId: randomUUID(), code } });
    const remove = await stack.call('DELETE', `/v1/auth/factors/${enrolment.factorId}`, { bearer: attacker.accessToken, body: { code } });
    for (const [what, res] of Object.entries({ confirm, unknown, remove })) {
      const { timestamp: _t, path: _p, ...shape } = res.json() as Record<string, unknown>;
      assert.deepEqual([res.status, shape], [401, { status: 401, error: 'Unauthorized', message: 'Invalid code' }], what);
    }
    // The victim's pending factor is untouched: it confirms with that very code.
    const mine = await stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer: victim.accessToken, body: { factorId: enrolment.factorId, code } });
    assert.equal(mine.status, 200, mine.body.toString());
  });

  it('an operation that takes a token or none (an ADMIN\'s password-reset ticket) refuses an ADMIN\'s aal 1 token', async () => {
    const admin = await stack.userWith(['ADMIN']);
    const user = await stack.userWith(['STANDARD_USER']);
    const res = await stack.call('POST', '/v1/users/password-reset-request', { bearer: admin.accessToken, body: { username: user.username } });
    assert.deepEqual([res.status, (res.json() as { message: string }).message], [403, 'Second factor required']);
  });

  it('the same code sent twice at once through the gateway is accepted once; replayed later, 401', async () => {
    const owner: LoggedInUser = await stack.userWith(['STANDARD_USER']);
    const enrolment = (await stack.call('POST', '/v1/auth/factors/totp', { bearer: owner.accessToken })).json() as { factorId: string; otpauthUri: string };
    assert.equal((await stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer: owner.accessToken, body: { factorId: enrolment.factorId, code: await codeOf(enrolment.otpauthUri) } })).status, 200);
    const logins = await Promise.all([0, 1].map(() => stack.call('POST', '/v1/auth/login', { body: { username: owner.username, password: owner.password } })));
    const tokens = logins.map((l) => (l.json() as { accessToken: string }).accessToken);
    const next = await codeOf(enrolment.otpauthUri, 1);
    const answers = await Promise.all(tokens.map((bearer) => stack.call('POST', '/v1/auth/second-factor', { bearer, body: { code: next } })));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 401]);
    const third = await stack.call('POST', '/v1/auth/login', { body: { username: owner.username, password: owner.password } });
    const replay = await stack.call('POST', '/v1/auth/second-factor', { bearer: (third.json() as { accessToken: string }).accessToken, body: { code: next } });
    assert.equal(replay.status, 401);
  });

  /**
   * Times `send` for users a and b, in blocks (abba), each sample in a session of its own (five wrong codes
   * end one; the login is not timed): whether the times are told apart (bound 15 %, measured again when they
   * are), and every answer seen, its timestamp left out.
   */
  async function timedAlike(users: Record<Which, LoggedInUser>, blocks: number, send: (bearer: string, which: Which) => Promise<Answer>) {
    const answers = new Set<string>();
    const measure = async () => (await abba(blocks, async (which) => {
      const login = await stack.call('POST', '/v1/auth/login', { body: { username: users[which].username, password: users[which].password } });
      const bearer = (login.json() as { accessToken: string }).accessToken;
      const started = performance.now();
      const res = await send(bearer, which);
      const ms = performance.now() - started;
      const { timestamp: _t, ...shape } = res.json() as Record<string, unknown>;
      answers.add(`${res.status} ${JSON.stringify(shape)}`);
      return { answer: ms };
    })).answer;
    const { apart, comparisons } = await toldApartAgain(measure, 0.15);
    return { apart, told: comparisons.map(describeComparison).join('; then '), answers: [...answers] };
  }

  it('a wrong code of a user with a factor and any code of a user without one take the same time (and answer alike)', async () => {
    const withFactor = await stack.userWith(['STANDARD_USER']);
    const enrolment = (await stack.call('POST', '/v1/auth/factors/totp', { bearer: withFactor.accessToken })).json() as { factorId: string; otpauthUri: string };
    assert.equal((await stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer: withFactor.accessToken, body: { factorId: enrolment.factorId, code: await codeOf(enrolment.otpauthUri) } })).status, 200);
    const without = await stack.userWith(['STANDARD_USER']);
    const { apart, told, answers } = await timedAlike({ a: withFactor, b: without }, 24, (bearer) => stack.call('POST', '/v1/auth/second-factor', { bearer, body: { code: '000000' } }));
    assert.deepEqual(answers, ['401 {"status":401,"error":"Unauthorized","message":"Invalid code","path":"/v1/auth/second-factor"}']);
    assert.ok(!apart, `${told} (a: a user with a factor, b: one without; bound 15 %)`);
  });

  it('a confirmation with a wrong code of one\'s pending factor and one with an unknown factor take the same time (and answer alike)', async () => {
    const owner = await stack.userWith(['STANDARD_USER']);
    const { factorId } = (await stack.call('POST', '/v1/auth/factors/totp', { bearer: owner.accessToken })).json() as { factorId: string };
    const stranger = await stack.userWith(['STANDARD_USER']);
    const { apart, told, answers } = await timedAlike({ a: owner, b: stranger }, 16, (bearer, which) =>
      stack.call('POST', '/v1/auth/factors/totp/confirm', { bearer, body: { factorId: which === 'a' ? factorId : randomUUID(), code: '000000' } }),
    );
    assert.deepEqual(answers, ['401 {"status":401,"error":"Unauthorized","message":"Invalid code","path":"/v1/auth/factors/totp/confirm"}']);
    assert.ok(!apart, `${told} (a: a wrong code of one's pending factor, b: an unknown factor; bound 15 %)`);
  });
});
