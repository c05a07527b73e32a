import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { ConflictError, ServiceUnavailableError, errorHandler } from '@platform/errors';
import { createRevocationReader } from '@platform/auth';
import { freshEnvironment, ledgerKey, revocationBucket, sessionKey, tokenKey } from '@platform/auth/testing';
import { createLogger } from '@platform/service-kit';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { ADMISSION_ARGS, ADMISSION_KEYS, type AdmissionStore, clientKeyTag, createAdmissionStore, idempotencyRedisKey, nonceKey, rateKey, replayBornKey } from '../src/admission/admission.ts';
import { type Forward, type Step, chain, keepsIdempotencyKey } from '../src/pipeline/chain.ts';
import type { GatewayRequest } from '../src/pipeline/gateway-request.ts';
import type { GatewayOperation } from '../src/proxy/operation-table.ts';

const OPERATION: GatewayOperation = { method: 'POST', template: '/v1/x', upstream: 'identity', needsBearer: false, acceptsBearer: false, firstFactorSuffices: false, introspectionKeysOnly: false };
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An app whose one route is `chain(steps, forward)`, recording the requests whose key it released. */
function appOf(steps: Step[], forward: Forward, options: { deadlineMs?: number } = {}) {
  const released: string[] = [];
  const app = express();
  if (options.deadlineMs !== undefined) {
    const deadlineMs = options.deadlineMs;
    app.use((_req: Request, res: Response, next: NextFunction) => {
      const timer = setTimeout(() => res.headersSent || res.status(503).json({ status: 503 }), deadlineMs);
      res.once('close', () => clearTimeout(timer));
      next();
    });
  }
  app.post('/v1/x', chain(OPERATION, steps, forward, (r: GatewayRequest) => released.push(r.idempotencyKey)));
  app.use(errorHandler());
  return { app, released };
}

const holdKey: Step = (r) => {
  r.idempotencyKey = 'k';
  r.mayHoldKey = true;
};
const answer =
  (status: number): Forward =>
  (r) => {
    r.res.status(status).json({});
    return Promise.resolve(status);
  };

describe('the gateway chain (pipeline/chain.ts)', () => {
  it('keeps the idempotency key for every answer below 500, and only then', () => {
    for (const status of [200, 201, 400, 401, 404, 409, 429, 499]) assert.equal(keepsIdempotencyKey(status), true, String(status));
    for (const status of [500, 502, 503, 504]) assert.equal(keepsIdempotencyKey(status), false, String(status));
    assert.equal(keepsIdempotencyKey(undefined), false, 'no answer came');
  });

  it('when a step throws, answers its error, runs no later step, and keeps a key it held for a 4xx', async () => {
    let forwarded = false;
    const { app, released } = appOf(
      [
        holdKey,
        () => {
          throw new ConflictError('no');
        },
      ],
      () => ((forwarded = true), Promise.resolve(200)),
    );
    assert.equal((await request(app).post('/v1/x')).status, 409);
    assert.equal(forwarded, false);
    assert.deepEqual(released, []);
  });

  it('when a step rejects with a 5xx, answers it and releases the key it held', async () => {
    const { app, released } = appOf([holdKey, () => Promise.reject(new ServiceUnavailableError())], answer(200));
    assert.equal((await request(app).post('/v1/x')).status, 503);
    assert.deepEqual(released, ['k']);
  });

  it('when a step throws something that is no HttpError (a fault of the gateway), answers 500 and releases the key', async () => {
    const { app, released } = appOf(
      [
        holdKey,
        () => {
          throw new TypeError('bug');
        },
      ],
      answer(200),
    );
    assert.equal((await request(app).post('/v1/x')).status, 500);
    assert.deepEqual(released, ['k']);
  });

  it('never releases a key the request did not hold', async () => {
    const { app, released } = appOf([() => Promise.reject(new ServiceUnavailableError())], answer(200));
    assert.equal((await request(app).post('/v1/x')).status, 503);
    assert.deepEqual(released, []);
  });

  it('releases on a 5xx the forward step gave, keeps on a 2xx, whether it resolved the status or gave it at once (a cached hit, no promise)', async () => {
    const atOnce =
      (status: number): Forward =>
      (r) => (r.res.status(status).json({}), status);
    for (const form of [answer, atOnce]) {
      const failed = appOf([holdKey], form(502));
      assert.equal((await request(failed.app).post('/v1/x')).status, 502);
      assert.deepEqual(failed.released, ['k']);
      const ok = appOf([holdKey], form(200));
      assert.equal((await request(ok.app).post('/v1/x')).status, 200);
      assert.deepEqual(ok.released, []);
    }
  });

  it('when the forward step throws at once, answers its error and settles the key by it', async () => {
    const conflict = appOf([holdKey], () => {
      throw new ConflictError('no');
    });
    assert.equal((await request(conflict.app).post('/v1/x')).status, 409);
    assert.deepEqual(conflict.released, []);
    const bug = appOf([holdKey], () => {
      throw new TypeError('bug');
    });
    const res = await request(bug.app).post('/v1/x');
    assert.equal(res.status, 500);
    assert.doesNotMatch(res.text, /bug|TypeError/);
    assert.deepEqual(bug.released, ['k']);
  });

  it('when no answer came (the forward step resolved none), releases the key', async () => {
    const { app, released } = appOf([holdKey], (r) => {
      r.res.destroy();
      return Promise.resolve(undefined);
    });
    await assert.rejects(request(app).post('/v1/x'));
    await sleep(20);
    assert.deepEqual(released, ['k']);
  });

  it('when the deadline answered while a step was waiting, runs nothing after it, keeps the deadline\'s answer and releases the key', async () => {
    let forwarded = false;
    const { app, released } = appOf([holdKey, () => sleep(100)], () => ((forwarded = true), Promise.resolve(200)), { deadlineMs: 20 });
    assert.equal((await request(app).post('/v1/x')).status, 503);
    await sleep(150);
    assert.equal(forwarded, false);
    assert.deepEqual(released, ['k']);
  });

  it('when a step rejects after the deadline answered, keeps that answer (no second one) and releases the key', async () => {
    const { app, released } = appOf([holdKey, () => sleep(60).then(() => Promise.reject(new ConflictError('late')))], answer(200), { deadlineMs: 20 });
    assert.equal((await request(app).post('/v1/x')).status, 503);
    await sleep(100);
    assert.deepEqual(released, ['k']);
  });

  it('when the client hangs up while a step waits, still settles the key by the answer the chain reaches', async () => {
    const { app, released } = appOf([holdKey, () => sleep(80)], answer(500));
    const server = app.listen(0);
    try {
      const { port } = server.address() as { port: number };
      const http = await import('node:http');
      const req = http.request({ port, method: 'POST', path: '/v1/x' });
      req.on('error', () => undefined);
      req.end();
      await sleep(20);
      req.destroy();
      await sleep(150);
      assert.deepEqual(released, ['k']);
    } finally {
      server.close();
    }
  });
});

describe('the admission store\'s calls of the script (admission.ts, arguments encoded once per client key)', () => {
  let testRedis: TestRedis;
  before(async () => {
    testRedis = await createTestRedis('gw-admission-calls');
  });
  after(async () => {
    await testRedis.close();
  });

  it('sends every request its own nonce, key, owner, time and stamp, with the key\'s and the policy\'s own values, whatever the templates reused', async () => {
    const { redis } = testRedis;
    const logger = createLogger({ service: 'test', level: 'silent' });
    const keyIds = ['k:1', 'k{2}'];
    const store = createAdmissionStore(redis, { nonceTtlS: 300, safeTtlS: 60, unsafeTtlS: 86_400, revocations: createRevocationReader(redis, { logger }), keyIds: () => keyIds });
    await store.dateKeys();
    // The keys' ledgers dated long enough ago that a request signed now is none of a loss's (CONTRACT.md part 13).
    await Promise.all(keyIds.map(async (keyId) => await redis.hset(replayBornKey(keyId), 'born', String(Date.now() - 5000))));
    const created = Math.floor(Date.now() / 1000);
    const sent: string[][] = [];
    type Admit = (this: unknown, ...call: string[]) => Promise<unknown>;
    const scripts = redis as unknown as { gatewayAdmit: Admit };
    const admit = scripts.gatewayAdmit;
    // The store's call only: ioredis's auto-pipeline calls the command again on its pipeline.
    scripts.gatewayAdmit = function (this: unknown, ...call: string[]) {
      if (this === redis) sent.push(call);
      return admit.apply(this, call);
    };
    try {
      const slow = { limit: 5, windowS: 60 };
      const fast = { limit: 100, windowS: 1 };
      const requests = [
        { keyId: 'k:1', method: 'GET', rate: slow },
        { keyId: 'k:1', method: 'GET', rate: slow },
        { keyId: 'k:1', method: 'POST', rate: slow },
        { keyId: 'k:1', method: 'GET', rate: fast },
        { keyId: 'k{2}', method: 'GET', rate: slow },
        { keyId: 'k{2}', method: 'DELETE', rate: undefined },
      ];
      for (const [i, r] of requests.entries()) {
        const admission = await store.admit({ ...r, nonce: `n${i}`, idempotencyKey: `i${i}`, token: undefined, bearing: false, created: created + i, owner: `o${i}` });
        assert.equal(admission.outcome, 'claimed', `request ${i}`);
      }
      assert.equal(sent.length, requests.length);
      for (const [i, r] of requests.entries()) {
        const call = sent[i] as string[];
        const keys = Object.fromEntries(ADMISSION_KEYS.map((name, at) => [name, call[at]]));
        const args = Object.fromEntries(ADMISSION_ARGS.map((name, at) => [name, call[ADMISSION_KEYS.length + at]]));
        assert.equal(keys.rate, rateKey(r.keyId, r.rate?.windowS ?? 0));
        assert.equal(keys.nonce, nonceKey(r.keyId, `n${i}`));
        assert.equal(keys.idempotency, idempotencyRedisKey(r.keyId, `i${i}`));
        assert.equal(keys.born, replayBornKey(r.keyId));
        assert.match(String(keys.stamp), new RegExp(`^${clientKeyTag(r.keyId).replace(/[{}]/g, '\\$&')}stamp:gateway:`));
        assert.deepEqual(
          [args.nonce_ttl_ms, args.key_ttl_ms, args.owner, args.limit, args.width_ms, args.created],
          ['300000', r.method === 'GET' ? '60000' : '86400000', `o${i}`, String(r.rate?.limit ?? 0), String(r.rate === undefined ? 0 : (r.rate.windowS * 1000) / 10), String(created + i)],
        );
        assert.ok(Math.abs(Number(args.now) - Date.now()) < 5000);
        assert.match(String(args.stamp_seen), /^\d+$/);
      }
      // Each client key its own stamp; the stamp's count goes up with the key's writes, never back.
      const at = ADMISSION_KEYS.indexOf('stamp');
      assert.notEqual(sent[0]?.[at], sent[4]?.[at]);
      const seen = ADMISSION_KEYS.length + ADMISSION_ARGS.indexOf('stamp_seen');
      assert.ok(Number(sent[3]?.[seen]) >= Number(sent[0]?.[seen]));
    } finally {
      scripts.gatewayAdmit = admit;
      await store.stop();
    }
  });
});

describe('a bearer request\'s revocation check on one Redis: inside its admission script, one command (ADMIT_CHECKED_SCRIPT)', () => {
  let testRedis: TestRedis;
  const logger = createLogger({ service: 'test', level: 'silent' });
  const keyId = 'checked';
  before(async () => {
    testRedis = await createTestRedis('gw-admission-checked');
  });
  after(async () => {
    await testRedis.close();
  });

  /**
   * Runs `body` with an admission store on a fresh environment: its revocations able to run inside its script,
   * or (`apart`) without `checkOf`; and the store's calls of each script, as the store makes them (not ioredis's
   * auto-pipeline's own).
   */
  async function withStore(apart: boolean, body: (store: AdmissionStore, calls: Map<string, string[][]>) => Promise<void>): Promise<void> {
    const { redis } = testRedis;
    await freshEnvironment(redis, [replayBornKey(keyId)]);
    const reader = createRevocationReader(redis, { logger });
    const revocations = apart ? { isRevoked: reader.isRevoked, closeAll: reader.closeAll } : reader;
    const store = createAdmissionStore(redis, { nonceTtlS: 300, safeTtlS: 60, unsafeTtlS: 86_400, revocations, keyIds: () => [keyId] });
    type Command = (this: unknown, ...args: string[]) => Promise<unknown>;
    const scripts = redis as unknown as Record<string, Command>;
    const names = ['gatewayAdmit', 'gatewayAdmitChecked', 'revocationCheck'];
    const calls = new Map<string, string[][]>(names.map((name) => [name, []]));
    const originals = names.map((name) => [name, scripts[name] as Command] as const);
    for (const [name, original] of originals) {
      scripts[name] = function (this: unknown, ...args: string[]) {
        if (this === redis) calls.get(name)?.push(args);
        return original.apply(this, args);
      };
    }
    try {
      await body(store, calls);
    } finally {
      for (const [name, original] of originals) scripts[name] = original;
      await store.stop();
      await reader.stop();
    }
  }

  it('answers as the two scripts apart do: claimed, token-revoked for a revoked token or an ended session, revocations-restoring for a closed bucket (its nonce and idempotency key taken back), each in one command carrying both checks\' keys', async () => {
    const { redis } = testRedis;
    await withStore(false, async (store, calls) => {
      const created = Math.floor(Date.now() / 1000);
      const admit = (nonce: string, token: { tokenId: string; sessionId: string }) =>
        store.admit({ keyId, nonce, idempotencyKey: `i-${nonce}`, method: 'GET', token, bearing: true, created, owner: randomUUID(), rate: { limit: 100, windowS: 60 } });
      const good = { tokenId: 'good', sessionId: 's-good' };
      assert.equal((await admit('n1', good)).outcome, 'claimed');
      const [call] = calls.get('gatewayAdmitChecked') ?? [];
      assert.deepEqual(call?.slice(0, 3), [ledgerKey(revocationBucket(good.sessionId)), tokenKey(good), sessionKey(good.sessionId)]);
      assert.equal(call?.[3 + ADMISSION_KEYS.indexOf('nonce')], nonceKey(keyId, 'n1'));

      const revoked = { tokenId: 'revoked', sessionId: 's-revoked' };
      await redis.set(tokenKey(revoked), '1', 'EX', 60);
      assert.equal((await admit('n2', revoked)).outcome, 'token-revoked');
      const ended = { tokenId: 'other', sessionId: 's-ended' };
      await redis.set(sessionKey(ended.sessionId), '1', 'EX', 60);
      assert.equal((await admit('n3', ended)).outcome, 'token-revoked');

      // A bucket being re-seeded: 503's outcome, and the request's claims taken back, so the same request passes once it is whole.
      const closed = { tokenId: 'closed', sessionId: 's-closed' };
      const ledger = ledgerKey(revocationBucket(closed.sessionId));
      await redis.hset(ledger, 'ready', '0');
      assert.equal((await admit('n4', closed)).outcome, 'revocations-restoring');
      assert.equal(await redis.exists(nonceKey(keyId, 'n4'), idempotencyRedisKey(keyId, 'i-n4')), 0);
      await redis.hset(ledger, 'ready', '1');
      assert.equal((await admit('n4', closed)).outcome, 'claimed');
      // A replay is still the script's answer, ranked after the token's.
      assert.equal((await admit('n1', good)).outcome, 'nonce-reused');

      assert.equal(calls.get('gatewayAdmitChecked')?.length, 6);
      assert.equal(calls.get('gatewayAdmit')?.length, 0);
      assert.equal(calls.get('revocationCheck')?.length, 0);
    });
  });

  it('keeps the two apart for revocations that cannot run inside it (no checkOf), and a request without a bearer token runs the admission alone', async () => {
    const { redis } = testRedis;
    await withStore(true, async (store, calls) => {
      const created = Math.floor(Date.now() / 1000);
      const revoked = { tokenId: 'apart', sessionId: 's-apart' };
      await redis.set(tokenKey(revoked), '1', 'EX', 60);
      const bearer = await store.admit({ keyId, nonce: 'a1', idempotencyKey: 'ia1', method: 'GET', token: revoked, bearing: true, created, owner: 'o', rate: undefined });
      assert.equal(bearer.outcome, 'token-revoked');
      const anonymous = await store.admit({ keyId, nonce: 'a2', idempotencyKey: 'ia2', method: 'GET', token: undefined, bearing: false, created, owner: 'o', rate: undefined });
      assert.equal(anonymous.outcome, 'claimed');
      assert.equal(calls.get('gatewayAdmit')?.length, 2);
      assert.equal(calls.get('revocationCheck')?.length, 1);
      assert.equal(calls.get('gatewayAdmitChecked')?.length, 0);
    });
  });
});

describe('the admission script (admission/lua/admit.lua)', () => {
  const lua = readFileSync(new URL('../src/admission/lua/admit.lua', import.meta.url), 'utf8');
  it('names its KEYS and ARGV in the order admission.ts sends them', () => {
    const table = (name: string) => {
      const body = new RegExp(`local ${name} = \\{([^}]*)\\}`).exec(lua)?.[1] ?? '';
      return [...body.matchAll(/(\w+) = (?:tonumber\()?(KEYS|ARGV)\[(\d+)\]/g)].map((m) => [m[1], Number(m[3])] as const);
    };
    assert.deepEqual(table('key'), ADMISSION_KEYS.map((name, i) => [name, i + 1]));
    assert.deepEqual(table('arg'), ADMISSION_ARGS.map((name, i) => [name, i + 1]));
  });
});
