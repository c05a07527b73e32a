import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRevocationReader } from '@platform/auth';
import { freshEnvironment } from '@platform/auth/testing';
import { createLogger } from '@platform/service-kit';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { type AdmissionStore, createAdmissionStore, nonceKey, replayBornKey } from '../src/admission/admission.ts';
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

  describe('at the admission store', () => {
    const keyId = 'peers-key';
    const nowS = () => Math.floor(Date.now() / 1000);
    const logger = createLogger({ service: 'test', level: 'silent' });
    const storeOn = (redis: TestRedis['redis']) =>
      createAdmissionStore(redis, { nonceTtlS: 602, safeTtlS: 602, unsafeTtlS: 602, revocations: createRevocationReader(redis, { logger }), keyIds: () => [keyId] });
    /** A request of the key with `nonce`, signed in the current second unless told otherwise: the store's outcome. */
    const admit = async (store: AdmissionStore, nonce: string, created = nowS(), key = keyId) =>
      (await store.admit({ keyId: key, nonce, idempotencyKey: randomUUID(), method: 'POST', token: undefined, bearing: false, created, owner: randomUUID(), rate: undefined })).outcome;
    const channel = () => `${environment.keyPrefix}${SIGNED_AHEAD_CHANNEL}`;
    /** Told by hand, as a gateway `teller` tells it. */
    const tell = (nonce: string, created: number, ttlMs = 600_000, key = keyId) => environment.redis.publish(channel(), `teller\n${key}\n${nonceKey(key, nonce)}\n${created}\n${ttlMs}`);
    /** Subscribed once connected: told nonces until the store refuses one it never saw in Redis (409 by its memory). */
    const subscribed = async (store: AdmissionStore) => {
      for (let i = 0; i < 100; i += 1) {
        const probe = `probe-${randomUUID()}`;
        await tell(probe, nowS() + 2);
        await sleep(30);
        if ((await admit(store, probe)) === 'nonce-reused') return;
      }
      assert.fail('the store never heard the channel');
    };

    beforeEach(async () => {
      // A new environment: the key's ledger dated at the epoch, no loss to recover from.
      await freshEnvironment(environment.redis, [keyId, 'not-configured'].map(replayBornKey));
    });

    it('keeps a nonce told within the signature\'s skew, of a configured key, for no longer than a nonce: what another gateway could have admitted; the rest is not kept', async () => {
      const store = storeOn(environment.redis);
      try {
        await subscribed(store);
        const cases = [
          // Kept: ahead of this clock, and behind it (the teller's clock ran behind this one's).
          { name: 'ahead', created: nowS() + 120, kept: true },
          { name: 'behind this clock', created: nowS() - 3, kept: true },
          // Signed 300 s ahead by a gateway whose clock runs behind this one's (the outside attack: 2.5 s apart).
          { name: 'clocks apart', created: nowS() + 303, kept: true },
          // Not: beyond the skew (300 s) and the clocks' minute, a lifetime longer than a nonce's, a key not
          // configured, a nonce no signature carries.
          { name: 'too far ahead', created: nowS() + 361, kept: false },
          { name: 'too far behind', created: nowS() - 361, kept: false },
          { name: 'kept too long', created: nowS() + 10, ttlMs: 602_001, kept: false },
          { name: 'another key', created: nowS() + 10, key: 'not-configured', kept: false },
          { name: 'not a nonce', created: nowS() + 10, nonce: 'odd nonce:*', kept: false },
        ];
        const nonces = cases.map((told) => `${told.nonce ?? told.name.replaceAll(' ', '-')}-${randomUUID()}`);
        for (const [i, told] of cases.entries()) await tell(nonces[i] as string, told.created, told.ttlMs, told.key);
        await sleep(100);
        // Each nonce claimed here, never written in Redis: refused by the store's memory only when it kept it.
        const outcomes = await Promise.all(nonces.map(async (nonce, i) => await admit(store, nonce, nowS(), cases[i]?.key)));
        assert.deepEqual(
          Object.fromEntries(cases.map((told, i) => [told.name, outcomes[i]])),
          Object.fromEntries(cases.map((told) => [told.name, told.kept ? 'nonce-reused' : 'claimed'])),
        );
      } finally {
        await store.stop();
      }
    });

    it('remembers, and tells, a nonce signed ahead whose admission failed after the script may have written it (its answer lost): its replay after a loss is refused on every gateway', async () => {
      // The outside attack: Redis answered after the command timeout (500 ms), the gateway answered 503, and no
      // gateway knew the nonce the script had written: its replay after a flush ran the request (202).
      const admitting = storeOn(environment.redis);
      const other = storeOn(environment.redis);
      type Admit = (this: unknown, ...call: string[]) => Promise<unknown>;
      const scripts = environment.redis as unknown as { gatewayAdmit: Admit };
      const run = scripts.gatewayAdmit;
      try {
        await subscribed(other);
        const nonce = `lost-answer-${randomUUID()}`;
        // The script runs and writes the nonce; its answer never reaches the store (ioredis's auto-pipeline calls
        // the command again on its pipeline: that call passes).
        scripts.gatewayAdmit = function (this: unknown, ...call: string[]) {
          const ran = run.apply(this, call);
          return this === environment.redis ? ran.then(() => Promise.reject(new Error('Command timed out'))) : ran;
        };
        await assert.rejects(admit(admitting, nonce, nowS() + 30), /Command timed out/);
        scripts.gatewayAdmit = run;
        assert.equal(await environment.redis.exists(nonceKey(keyId, nonce)), 1, 'the script wrote it');
        // Its nonce gone with a loss (the key's ledger kept, so no window applies): refused by both memories.
        await environment.redis.del(nonceKey(keyId, nonce));
        await sleep(100);
        assert.equal(await admit(admitting, nonce, nowS() + 30), 'nonce-reused');
        await environment.redis.del(nonceKey(keyId, nonce));
        assert.equal(await admit(other, nonce, nowS() + 30), 'nonce-reused');
      } finally {
        scripts.gatewayAdmit = run;
        await admitting.stop();
        await other.stop();
      }
    });

    it('does not remember a nonce the script refused without writing it: a request signed ahead, refused before any claim, passes when sent again', async () => {
      const store = storeOn(environment.redis);
      try {
        const nonce = `refused-${randomUUID()}`;
        // Signed before the key's ledger was born: refused by the script, nothing written.
        await environment.redis.hset(replayBornKey(keyId), 'born', String(Date.now() + 1500));
        assert.equal(await admit(store, nonce, nowS() + 1), 'signed-near-loss');
        await environment.redis.hset(replayBornKey(keyId), 'born', '0');
        assert.equal(await admit(store, nonce, nowS() + 1), 'claimed');
      } finally {
        await store.stop();
      }
    });

    it('does not remember a nonce it took back: a request signed ahead whose revocation check failed after its claim passes when sent again (503, then 200)', async () => {
      let failing = true;
      const revocations = {
        isRevoked: async () => {
          if (failing) throw new Error('Command timed out');
          return false;
        },
        closeAll: async () => undefined,
      };
      const store = createAdmissionStore(environment.redis, { nonceTtlS: 602, safeTtlS: 602, unsafeTtlS: 602, revocations, keyIds: () => [keyId] });
      const bearer = async (nonce: string) =>
        (await store.admit({ keyId, nonce, idempotencyKey: `${nonce}-key`, method: 'POST', token: {} as never, bearing: true, created: nowS() + 2, owner: randomUUID(), rate: undefined })).outcome;
      try {
        const nonce = `taken-back-${randomUUID()}`;
        await assert.rejects(bearer(nonce), /Command timed out/);
        assert.equal(await environment.redis.exists(nonceKey(keyId, nonce)), 0, 'its nonce taken back');
        failing = false;
        assert.equal(await bearer(nonce), 'claimed');
      } finally {
        await store.stop();
      }
    });
  });
});
