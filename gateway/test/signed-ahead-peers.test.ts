import assert from 'node:assert/strict';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { SIGNED_AHEAD_CHANNEL, signedAheadPeers } from '../src/admission/signed-ahead-peers.ts';

// The channel on which gateways tell each other the nonces they admit signed ahead of their clocks
// (signed-ahead-peers.ts; what a gateway does with them after a loss is gateway-redis-loss.test.ts's).
describe('the signed-ahead channel between gateways', () => {
  let environment: TestRedis;
  let elsewhere: TestRedis;

  before(async () => {
    environment = await createTestRedis('gw-signed-ahead-peers');
    elsewhere = await createTestRedis('gw-signed-ahead-elsewhere');
  });
  after(async () => {
    await environment.close();
    await elsewhere.close();
  });

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** A gateway's side of the channel, and what it heard. */
  const listener = (redis: TestRedis['redis'], gatewayId: string) => {
    const heard: string[] = [];
    const peers = signedAheadPeers(redis, gatewayId, undefined, (keyId, nonceKey, created, ttlMs) => heard.push(`${keyId} ${nonceKey} ${created} ${ttlMs}`));
    return { peers, heard };
  };
  /** Waits until `ready()` or 3 s. */
  const until = async (ready: () => boolean) => {
    const deadline = Date.now() + 3000;
    while (!ready() && Date.now() < deadline) await sleep(20);
  };

  /** Subscribed once connected: `a` tells probes until `b` has heard one; the probes still on their way, heard and dropped. */
  const connected = async (a: ReturnType<typeof listener>, b: ReturnType<typeof listener>) => {
    await until(() => {
      a.peers.tell('key-1', 'gateway:{ck:key-1}:nonce:probe', 1, 1000);
      return b.heard.length > 0;
    });
    await sleep(100);
    b.heard.length = 0;
  };

  it('tells every other gateway of the same environment, not the teller itself and not another environment sharing the Redis', async () => {
    const a = listener(environment.redis, 'gateway-a');
    const b = listener(environment.redis, 'gateway-b');
    const other = listener(elsewhere.redis, 'gateway-c');
    try {
      await connected(a, b);
      a.peers.tell('key-1', 'gateway:{ck:key-1}:nonce:abc', 1_700_000_100, 600_000);
      await until(() => b.heard.length > 0);
      assert.deepEqual(b.heard, ['key-1 gateway:{ck:key-1}:nonce:abc 1700000100 600000']);
      await sleep(100);
      assert.deepEqual(a.heard, [], 'a gateway does not hear itself');
      assert.deepEqual(other.heard, [], 'another environment hears nothing');
    } finally {
      for (const side of [a, b, other]) side.peers.stop();
    }
  });

  it('ignores what is not a nonce told by a gateway: too few or too many fields, a created or a lifetime that is no whole number', async () => {
    const b = listener(environment.redis, 'gateway-b');
    const a = listener(environment.redis, 'gateway-a');
    const channel = `${environment.keyPrefix}${SIGNED_AHEAD_CHANNEL}`;
    try {
      await connected(a, b);
      for (const text of ['', 'x', 'gateway-x\nkey-1\nn\n1', 'gateway-x\nkey-1\nn\n1\n1000\nmore', 'gateway-x\nkey-1\nn\nsoon\n1000', 'gateway-x\nkey-1\nn\n1\n-5', 'gateway-x\n\nn\n1\n1000']) {
        await environment.redis.publish(channel, text);
      }
      await environment.redis.publish(channel, 'gateway-x\nkey-1\nn\n1\n1000');
      await until(() => b.heard.length > 0);
      assert.deepEqual(b.heard, ['key-1 n 1 1000']);
    } finally {
      a.peers.stop();
      b.peers.stop();
    }
  });
});
