import assert from 'node:assert/strict';
import { signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { type Answer, sendRaw } from './support/raw-http.ts';
import { CLIENT_KEY, type LoggedInUser, type Stack, startStack } from './support/stack.ts';

const CITIES = '/v1/weather-stations/get-cities';
const LIMIT = 8;

/** `"default";r=3;t=60` → 3 */
function remaining(res: Answer): number {
  const match = /;r=(\d+);t=\d+$/.exec(String(res.headers.ratelimit));
  assert.ok(match, `RateLimit: ${String(res.headers.ratelimit)}`);
  return Number(match[1]);
}

/**
 * Finding 6 through the real stack: whoever captured one signed request cannot spend its client key's
 * quota by replaying it. A replay (a nonce already seen) is told apart in the same Redis round trip before
 * anything is counted; a fresh request counts as CONTRACT.md part 12 says.
 */
describe('security: a replayed request spends nobody\'s quota', function () {
  this.timeout(60_000);
  let stack: Stack;
  let user: LoggedInUser;

  before(async () => {
    stack = await startStack({ gatewayEnv: { GATEWAY_RATE_LIMITS: JSON.stringify({ '*': { limit: LIMIT, windowS: 600 } }) } });
    user = await stack.userWith(['STANDARD_USER']);
  });
  after(async () => {
    await stack?.close();
  });

  const fresh = () => stack.call('GET', CITIES, { bearer: user.accessToken });

  it('when one captured signed request is replayed again and again, each replay is 409 and the quota is untouched: the key\'s fresh requests still get their whole share', async () => {
    const captured = signedHeaders('GET', CITIES, { key: CLIENT_KEY, bearer: user.accessToken });
    const original = await sendRaw(stack.gatewayUrl, 'GET', CITIES, captured);
    assert.equal(original.status, 200, original.body.toString());
    const left = remaining(original);
    assert.ok(left >= 3, `the login and the original left ${left}`);

    for (let i = 0; i < 3 * LIMIT; i += 1) {
      const replay = await sendRaw(stack.gatewayUrl, 'GET', CITIES, captured);
      assert.deepEqual([replay.status, replay.json().message], [409, 'Replay attack detected (nonce reused)'], `replay ${i + 1}`);
      assert.equal(remaining(replay), left, `replay ${i + 1} was counted`);
    }

    const answers: Answer[] = [];
    for (let i = 0; i <= left; i += 1) answers.push(await fresh());
    assert.deepEqual(answers.map((a) => a.status), [...Array.from({ length: left }, () => 200), 429], 'the fresh requests did not get the quota the replays left');
    assert.deepEqual(answers.map(remaining), [...Array.from({ length: left }, (_, i) => left - 1 - i), 0]);

    // Over the limit, a replay is still told for what it is, and still counts for nothing.
    const late = await sendRaw(stack.gatewayUrl, 'GET', CITIES, captured);
    assert.deepEqual([late.status, remaining(late)], [409, 0]);
  });
});
