import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { type RunContext, type ScenarioResult, measureClosedInTurns, measureFixedPairsInTurns } from '../bench/harness/context.ts';
import { fixedRates } from '../bench/harness/load.ts';
import { kernelCounts, memorySampler } from '../bench/harness/processes.ts';
import { kindOf, parseReport, summarise } from '../bench/tools/perf-summary.ts';
import { evaluate, formatReport, machine } from '../bench/harness/report.ts';
import { resultsMarkdown } from '../bench/harness/markdown.ts';
import { loadBenchConfig } from '../bench/harness/config.ts';
import { createTestRedis } from '@platform/service-kit/testing';

const root = fileURLToPath(new URL('..', import.meta.url));

interface WrittenReport {
  complete: boolean;
  facts: Record<string, unknown>;
  results: Array<{ id: string; load: { requests: number; rps: number; non2xx: number; errors: number } }>;
  targets: Array<{ name: string; met: boolean | null }>;
}

/** Runs a bench script on the workspace's Node with `env` added: its exit code and its output (stdout and stderr). */
async function runScript(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  // 'close': exited, and its output read to the end.
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, output };
}

// The benchmark itself is `pnpm bench` (minutes, bench/README.md); this only proves the harness runs:
// the limit scenarios need no stack, so one second of each is enough.
describe('pnpm bench (bench/run.ts), smoke', function () {
  this.timeout(60_000);

  it('runs the limit scenarios for a second, prints the table and writes the JSON', async () => {
    const resultsDir = await mkdtemp(join(tmpdir(), 'bench-smoke-'));
    try {
      const { code, output } = await runScript(['bench/run.ts'], { BENCH_ONLY: 'limits', BENCH_DURATION_S: '1', BENCH_WARMUP_S: '0', BENCH_CONNECTIONS: '4', BENCH_RESULTS_DIR: resultsDir });
      assert.equal(code, 0, output);
      assert.match(output, /limit A: bare node:http/);
      assert.match(output, /limit B: bare Express 5/);

      const report = JSON.parse(await readFile(join(resultsDir, 'latest.json'), 'utf8')) as WrittenReport;
      // Limit B first as the run's reference, then the group's two limits.
      assert.deepEqual(
        report.results.map((r) => r.id),
        ['reference-limit-b', 'limit-a', 'limit-b'],
      );
      assert.match(output, /measured limit A: bare node:http/);
      assert.ok(typeof report.facts.limitBReferenceUs === 'number' && typeof report.facts.machineSlow === 'boolean', 'limit B against its quiet reference');
      assert.equal(report.complete, true);
      for (const { id, load } of report.results) {
        assert.ok(load.requests > 0 && load.rps > 0, `${id} answered nothing`);
        assert.equal(load.non2xx + load.errors, 0, `${id} had failures`);
      }
      // Targets whose scenarios did not run are reported as such, not as met or missed.
      assert.ok(report.targets.every((t) => t.met === null || t.met === undefined));
    } finally {
      await rm(resultsDir, { recursive: true, force: true });
    }
  });
});

/** A scenario's result as the bench records it: `rps` answers a second, `cpu` µs per answer of each server. */
function result(id: string, cpu: Record<string, number>, rate?: number, rps = rate ?? 1000): ScenarioResult {
  const load = { rps, requests: rps * 8, non2xx: 0, errors: 0, p50Ms: 1, p99Ms: 2, meanMs: 1, statuses: { 200: rps * 8 } };
  return rate === undefined ? { id, label: id, mode: 'closed', connections: 50, load, cpuUsPerRequest: cpu } : { id, label: id, mode: 'fixed', rate, load, cpuUsPerRequest: cpu };
}

describe('the limit servers (bench/limits/<name>.ts), each with its named options', function () {
  this.timeout(30_000);

  /** Starts a limit on a free port; stopped by the test. */
  async function startLimitServer(name: string, options: Record<string, string>, env: Record<string, string> = {}) {
    const { freePort, startProcess, untilOk } = await import('@platform/stack');
    const port = await freePort();
    const args = ['--port', String(port), ...Object.entries(options).flatMap(([flag, value]) => [`--${flag}`, value])];
    const server = startProcess({ name, entry: `bench/limits/${name}.ts`, args, env: { ...process.env, ...env }, url: `http://127.0.0.1:${port}`, output: 'capture' });
    return { server, ready: await untilOk(`${server.url}/health/live`, Date.now() + 15_000, server) };
  }

  /** The options of a checking limit that never reaches its Redis, identity or upstream in these tests. */
  const CHECKING = {
    'redis-url': process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    'key-secret': 'bench-smoke-secret',
    'redis-prefix': 'bench-smoke:',
    'jwks-url': 'http://127.0.0.1:9/.well-known/jwks.json',
    issuer: 'http://127.0.0.1:9',
  };

  it('limit C′ relays limit A\'s answer whole, and answers 502 when its upstream is gone', async () => {
    const a = await startLimitServer('bare-node', {});
    try {
      const lean = await startLimitServer('lean-proxy', { target: a.server.url });
      try {
        assert.ok(lean.ready, lean.server.output());
        const answer = await fetch(`${lean.server.url}/v1/weather-stations/by/id/17130`);
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
        assert.equal(((await answer.json()) as { stationId: number }).stationId, 17130);
        await a.server.stop();
        const gone = await fetch(`${lean.server.url}/v1/weather-stations/by/id/17130`);
        assert.equal(gone.status, 502);
      } finally {
        await lean.server.stop();
      }
    } finally {
      await a.server.stop();
    }
  });

  it('limit E′ traced exports a server span per request, named by the route, and will not run untraced on OTEL_* it cannot read', async () => {
    const { startOtlpReceiver } = await import('@platform/stack');
    const options = { target: 'http://127.0.0.1:9', ...CHECKING };
    const receiver = await startOtlpReceiver();
    try {
      const unreadable = await startLimitServer('traced-lean-checks', options, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'sometimes' });
      assert.equal(await unreadable.server.exited, 2);
      const traced = await startLimitServer('traced-lean-checks', options, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' });
      try {
        assert.ok(traced.ready, traced.server.output());
        // Unsigned: refused by E′'s checks, and traced all the same.
        assert.equal((await fetch(`${traced.server.url}/v1/weather-stations/by/id/17130`)).status, 401);
        const deadline = Date.now() + 10_000;
        let spans = receiver.spans().filter((span) => span.service === 'limit-e-traced');
        while (!spans.some((span) => span.name === 'GET /v1/weather-stations/by/id/{stationId}') && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          spans = receiver.spans().filter((span) => span.service === 'limit-e-traced');
        }
        const server = spans.find((span) => span.name === 'GET /v1/weather-stations/by/id/{stationId}');
        assert.ok(server, JSON.stringify(spans.map((span) => span.name)));
        assert.equal(server.attributes['http.response.status_code'], 401);
      } finally {
        await traced.server.stop();
      }
    } finally {
      await receiver.close();
    }
  });


  for (const [name, limit, options] of [
    ['G', 'stored-checks', CHECKING],
    ['E′ enveloped', 'enveloped-checks', { target: 'http://127.0.0.1:9', ...CHECKING }],
  ] as const) {
    it(`limit ${name} makes E′'s checks inside the gateway's envelope: an unsigned request is refused 401 with a request id, the security headers and an access line`, async () => {
      const started = await startLimitServer(limit, options);
      try {
        assert.ok(started.ready, started.server.output());
        const unsigned = await fetch(`${started.server.url}/v1/weather-stations/by/id/17130`);
        assert.equal(unsigned.status, 401);
        assert.match(unsigned.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
        assert.equal(unsigned.headers.get('x-frame-options'), 'DENY');
        // Its access line, as the gateway writes one per request.
        const deadline = Date.now() + 5000;
        while (!started.server.output().includes('"url":"/v1/weather-stations/by/id/17130"') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        assert.match(started.server.output(), /"url":"\/v1\/weather-stations\/by\/id\/17130"/);
      } finally {
        await started.server.stop();
      }
    });
  }

  it('limit G bare makes the gateway\'s admission in Redis and answers station 17130 from memory, once per nonce', async () => {
    const usage = await startLimitServer('round-trip', { 'redis-url': CHECKING['redis-url'] });
    assert.equal(await usage.server.exited, 2);
    assert.match(usage.server.output(), /usage: node bench\/limits\/round-trip\.ts --port <port> --redis-url <redis-url> --redis-prefix <redis-prefix>/);
    // Its own prefix on the test Redis, emptied at the end.
    const testRedis = await createTestRedis('bench-smoke-round-trip', CHECKING['redis-url']);
    try {
      const bare = await startLimitServer('round-trip', { 'redis-url': CHECKING['redis-url'], 'redis-prefix': testRedis.keyPrefix });
      try {
        assert.ok(bare.ready, bare.server.output());
        for (let i = 0; i < 3; i += 1) {
          const answer = await fetch(`${bare.server.url}/v1/weather-stations/by/id/17130`);
          assert.equal(answer.status, 200);
          assert.equal(answer.headers.get('x-cache'), 'HIT');
          assert.equal(((await answer.json()) as { stationId: number }).stationId, 17130);
        }
        // Each answer claimed its own nonce in the stack's prefix: the admission's round trip was made.
        const nonces = await testRedis.redis.keys(`${testRedis.keyPrefix}*nonce*`);
        assert.equal(nonces.length, 3, JSON.stringify(await testRedis.redis.keys(`${testRedis.keyPrefix}*`)));
      } finally {
        await bare.server.stop();
      }
    } finally {
      await testRedis.close();
    }
  });

  it('limit G′ does G\'s work with none of the packages\' code: the signature, the token, the revocation check and the gateway\'s own admission script, the envelope\'s headers and line', async () => {
    const usage = await startLimitServer('lean-stored-checks', { 'redis-url': CHECKING['redis-url'] });
    assert.equal(await usage.server.exited, 2);
    assert.match(usage.server.output(), /usage: node bench\/limits\/lean-stored-checks\.ts --port <port> --redis-url <redis-url> --key-secret <key-secret> --redis-prefix <redis-prefix> --jwks-url <jwks-url> --issuer <issuer>/);
    const { blacklistToken, createTestIssuer, freshEnvironment } = await import('@platform/auth/testing');
    const { clientKeyTag } = await import('@platform/gateway/engine');
    const { signOnce } = await import('../bench/harness/signer.ts');
    const issuer = createTestIssuer('http://127.0.0.1:9', 'urn:identity-risk-platform:api');
    const jwks = await issuer.serveJwks();
    const testRedis = await createTestRedis('bench-smoke-lean-stored', CHECKING['redis-url']);
    const keyId = 'bench-smoke-key';
    try {
      // A new environment (no loss to recover from): the revocation buckets open, the client key's ledger dated.
      await freshEnvironment(testRedis.redis, [`${clientKeyTag(keyId)}born`]);
      const lean = await startLimitServer('lean-stored-checks', { ...CHECKING, 'redis-prefix': testRedis.keyPrefix, 'jwks-url': jwks.url, issuer: issuer.issuer });
      try {
        assert.ok(lean.ready, lean.server.output());
        const url = new URL('/v1/weather-stations/by/id/17130', lean.server.url);
        const key = { keyId, secret: CHECKING['key-secret'] };
        const sid = 'bench-smoke-session';
        const headers = await signOnce(key, url, { method: 'GET', target: url.pathname, bearer: issuer.sign({ sid }) });
        const answer = await fetch(url, { headers });
        assert.equal(answer.status, 200, lean.server.output());
        assert.equal(((await answer.json()) as { stationId: number }).stationId, 17130);
        assert.equal(answer.headers.get('x-cache'), 'HIT');
        assert.match(answer.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
        assert.equal(answer.headers.get('x-frame-options'), 'DENY');
        assert.equal(answer.headers.get('ratelimit-policy'), '"default";q=1000000;w=1');
        assert.match(answer.headers.get('ratelimit') ?? '', /^"default";r=999999;t=\d+$/);
        // The gateway's script claimed the nonce under the gateway's key names: the same request again is a replay.
        const nonce = /nonce="([^"]+)"/.exec(headers['signature-input'] ?? '')?.[1];
        assert.equal(await testRedis.redis.exists(`${clientKeyTag(keyId)}nonce:${nonce}`), 1);
        assert.equal((await fetch(url, { headers })).status, 409);
        // The revocation check is made: a revoked token is refused.
        const jti = 'bench-smoke-revoked-token';
        await blacklistToken(testRedis.redis, { tokenId: jti, sessionId: sid }, Math.floor(Date.now() / 1000) + 900);
        const revoked = await signOnce(key, url, { method: 'GET', target: url.pathname, bearer: issuer.sign({ sid, jti }) });
        assert.equal((await fetch(url, { headers: revoked })).status, 401);
        // A token of another issuer, and no signature at all: 401.
        const foreign = await signOnce(key, url, { method: 'GET', target: url.pathname, bearer: createTestIssuer('http://127.0.0.1:9', 'urn:identity-risk-platform:api').sign() });
        assert.equal((await fetch(url, { headers: foreign })).status, 401);
        assert.equal((await fetch(url)).status, 401);
        // One access line per request, as the gateway writes it.
        const deadline = Date.now() + 5000;
        while ((lean.server.output().match(/"msg":"GET /g) ?? []).length < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        assert.deepEqual(lean.server.output().match(/"msg":"GET \d+"/g), ['"msg":"GET 200"', '"msg":"GET 409"', '"msg":"GET 401"', '"msg":"GET 401"', '"msg":"GET 401"']);
      } finally {
        await lean.server.stop();
      }
    } finally {
      await testRedis.close();
      await jwks.close();
    }
  });

  it('limit H needs the assertion key, and answers as risk does before the token: 401, its 400 of a bad id, 404, the envelope\'s headers', async () => {
    const options = {
      'redis-url': process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      'redis-prefix': 'bench-smoke:',
      'jwks-url': 'http://127.0.0.1:9/.well-known/jwks.json',
      issuer: 'http://127.0.0.1:9',
    };
    const keyless = await startLimitServer('lean-risk', options);
    assert.equal(await keyless.server.exited, 2);
    assert.match(keyless.server.output(), /usage: node bench\/limits\/lean-risk\.ts .*--assertion-key <assertion-key>/);
    const h = await startLimitServer('lean-risk', { ...options, 'assertion-key': 'bench-smoke-assertion-key' });
    try {
      assert.ok(h.ready, h.server.output());
      const forged = await fetch(`${h.server.url}/v1/weather-stations/by/id/17130`, { headers: { authorization: 'Bearer not.a.token' } });
      assert.equal(forged.status, 401);
      assert.match(forged.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(forged.headers.get('x-frame-options'), 'DENY');
      const badId = await fetch(`${h.server.url}/v1/weather-stations/by/id/abc`, { headers: { authorization: 'Bearer not.a.token' } });
      assert.equal(badId.status, 400);
      const body = (await badId.json()) as { status: number; messages: string[] };
      assert.equal(body.status, 400);
      assert.ok(body.messages.length > 0);
      assert.equal((await fetch(`${h.server.url}/v1/weather-stations/nowhere`)).status, 404);
    } finally {
      await h.server.stop();
    }
  });

  it('exits normally on SIGTERM, so that a limit run under --cpu-prof (BENCH_CPU_PROF) writes its profile', async () => {
    const { freePort, startProcess, untilOk } = await import('@platform/stack');
    const dir = await mkdtemp(join(tmpdir(), 'bench-smoke-prof-'));
    try {
      const port = await freePort();
      const server = startProcess({
        name: 'bare-node',
        entry: 'bench/limits/bare-node.ts',
        args: ['--port', String(port)],
        nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-name=limit-a.cpuprofile'],
        env: process.env,
        url: `http://127.0.0.1:${port}`,
        output: 'capture',
      });
      assert.ok(await untilOk(`${server.url}/health/live`, Date.now() + 15_000, server), server.output());
      assert.equal(await server.stop(), 0);
      const profile = JSON.parse(await readFile(join(dir, 'limit-a.cpuprofile'), 'utf8')) as { nodes: unknown[] };
      assert.ok(profile.nodes.length > 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses to start without the options it needs, naming them', async () => {
    const { server } = await startLimitServer('lean-checks', { target: 'http://127.0.0.1:9' });
    assert.equal(await server.exited, 2);
    assert.match(server.output(), /usage: node bench\/limits\/lean-checks\.ts --port <port> --target <target> --redis-url <redis-url>/);
  });
});

describe('the bench\'s settings (bench/harness/config.ts)', () => {
  it('BENCH_GATEWAY_SCENARIOS names the processes whose scenarios the gateway group measures; a name it does not know is refused, naming it', () => {
    assert.equal(loadBenchConfig({}).gatewayScenarios, undefined);
    assert.deepEqual([...(loadBenchConfig({ BENCH_GATEWAY_SCENARIOS: 'limit-c, limit-g-lean,gateway-cached' }).gatewayScenarios ?? [])], ['limit-c', 'limit-g-lean', 'gateway-cached']);
    assert.throws(() => loadBenchConfig({ BENCH_GATEWAY_SCENARIOS: 'limit-c,limit-q' }), /BENCH_GATEWAY_SCENARIOS: unknown process "limit-q" \(known: limit-c, limit-c-lean,/);
  });
});

describe('the bench\'s targets and ratios (bench/harness/report.ts evaluate)', () => {
  const target = (results: ScenarioResult[], name: string, facts = {}) => evaluate(results, facts, 2).targets.find((t) => t.name === name);
  const gatewayById = [
    result('limit-c-by-id', { 'limit-c': 200 }),
    result('gateway-by-id', { gateway: 220 }),
    result('limit-c-by-id-pace', { 'limit-c': 400 }, 1500),
    result('gateway-by-id-pace', { gateway: 560 }, 1500),
  ];

  it('judges the gateway against limit C of the same request by both figures, at one pace and in the closed loop', () => {
    assert.deepEqual(target(gatewayById, 'gateway CPU by-id / limit C, closed loop'), { name: 'gateway CPU by-id / limit C, closed loop', reached: '1.10×', goal: '≤ 1.15×', met: true });
    assert.deepEqual(target(gatewayById, 'gateway CPU by-id / limit C, at one pace'), { name: 'gateway CPU by-id / limit C, at one pace', reached: '1.40×', goal: '≤ 1.25×', met: false });
    // City-district is divided by limit C's city-district, never by its by/id.
    assert.equal(target([...gatewayById, result('gateway-city-district', { gateway: 230 })], 'gateway CPU city-district / limit C, closed loop')?.met, undefined);
  });

  it('judges a by/id answered from the gateway\'s station cache against limit C at 0.7×, both figures', () => {
    const results = [...gatewayById, result('gateway-cached-by-id', { 'gateway-cached': 120 }), result('gateway-cached-by-id-pace', { 'gateway-cached': 300 }, 1500)];
    assert.equal(target(results, 'gateway cached hit CPU by-id / limit C, closed loop')?.met, true);
    assert.deepEqual(target(results, 'gateway cached hit CPU by-id / limit C, at one pace'), { name: 'gateway cached hit CPU by-id / limit C, at one pace', reached: '0.75×', goal: '≤ 0.7×', met: false });
  });

  it('draws no verdict from a run whose limit B was over twice its quiet reference', () => {
    const slow = { machineSlow: true, limitBReferenceUs: 50, limitBQuietReferenceUs: 22 };
    assert.deepEqual(target(gatewayById, 'gateway CPU by-id / limit C, closed loop', slow), { name: 'gateway CPU by-id / limit C, closed loop', reached: '1.10×', goal: '≤ 1.15×', met: undefined });
    assert.equal(target(gatewayById, 'gateway CPU by-id / limit C, closed loop', { machineSlow: false })?.met, true);
  });

  it('takes no CPU figure from a scenario whose answers were refused, nor from one that fell behind its pace', () => {
    const refused = result('limit-c-by-id', { 'limit-c': 100 });
    refused.load = { ...refused.load, non2xx: refused.load.requests };
    assert.equal(target([refused, result('gateway-by-id', { gateway: 110 })], 'gateway CPU by-id / limit C, closed loop')?.met, undefined);
    const behind = [result('limit-c-by-id-pace', { 'limit-c': 400 }, 1500), result('gateway-by-id-pace', { gateway: 420 }, 1500, 1300)];
    assert.equal(target(behind, 'gateway CPU by-id / limit C, at one pace')?.met, undefined);
  });

  it('judges risk direct and vouched against limit B measured by turns beside them', () => {
    const results = [result('limit-b', { 'limit-b': 20 }), result('risk-by-id', { risk: 60 }), result('risk-vouched-by-id', { risk: 40 })];
    assert.equal(target(results, 'risk CPU by-id / limit B, closed loop')?.reached, '3.00×');
    assert.equal(target(results, 'risk CPU by-id / limit B, closed loop')?.met, true);
    assert.equal(target(results, 'risk vouched CPU by-id / limit B, closed loop')?.met, true);
    assert.equal(target(results, 'risk vouched CPU by-id / limit B, at one pace')?.met, undefined);
  });

  it('sets the floors beside the targets: limit C′ against C, E′ against C′, the gateway against E′', () => {
    const ratios = evaluate(
      [
        result('limit-c-by-id', { 'limit-c': 200 }),
        result('limit-c-lean-by-id', { 'limit-c-lean': 80 }),
        result('limit-e-lean-by-id', { 'limit-e-lean': 200 }),
        result('gateway-by-id', { gateway: 300 }),
      ],
      {},
      2,
    ).ratios;
    assert.equal(ratios['limit C′ CPU by-id / limit C, closed loop'], 0.4);
    assert.equal(ratios['limit E′ CPU by-id / limit C′, closed loop'], 2.5);
    assert.equal(ratios['gateway CPU by-id / limit E′, closed loop'], 1.5);
    assert.equal(ratios['limit E′ CPU by-id / limit C′, at one pace'], undefined);
  });

  it('sets risk\'s floors beside its targets: limit H (risk\'s work with nothing around it) against B, risk against H, direct and vouched', () => {
    const ratios = evaluate(
      [
        result('limit-b', { 'limit-b': 20 }),
        result('limit-h', { 'limit-h': 40 }),
        result('limit-h-vouched', { 'limit-h': 30 }),
        result('risk-by-id', { risk: 60 }),
        result('risk-vouched-by-id', { risk: 45 }),
      ],
      {},
      2,
    ).ratios;
    assert.equal(ratios['limit H CPU by-id / limit B, closed loop'], 2);
    assert.equal(ratios['limit H vouched CPU by-id / limit B, closed loop'], 1.5);
    assert.equal(ratios['risk CPU by-id / limit H, closed loop'], 1.5);
    assert.equal(ratios['risk vouched CPU by-id / limit H vouched, closed loop'], 1.5);
    assert.equal(ratios['limit H CPU by-id / limit B, at one pace'], undefined);
  });

  it('sets a cached hit\'s floors beside its target: limits G (E′\'s checks, the answer from memory) and G′ (the same, none of the packages\' code) against C, the hit against both', () => {
    const ratios = evaluate(
      [
        result('limit-c-by-id', { 'limit-c': 200 }),
        result('limit-g-by-id', { 'limit-g': 160 }),
        result('limit-g-lean-by-id', { 'limit-g-lean': 100 }),
        result('gateway-cached-by-id', { 'gateway-cached': 200 }),
        result('limit-g-by-id-pace', { 'limit-g': 300 }, 1500),
        result('gateway-cached-by-id-pace', { 'gateway-cached': 330 }, 1500),
      ],
      {},
      2,
    ).ratios;
    assert.equal(ratios['limit G CPU by-id / limit C, closed loop'], 0.8);
    assert.equal(ratios['gateway cached hit CPU by-id / limit G, closed loop'], 1.25);
    assert.equal(ratios['gateway cached hit CPU by-id / limit G, at one pace'], 1.1);
    assert.equal(ratios['limit G CPU by-id / limit C, at one pace'], undefined);
    assert.equal(ratios['limit G′ CPU by-id / limit C, closed loop'], 0.5);
    assert.equal(ratios['gateway cached hit CPU by-id / limit G′, closed loop'], 2);
  });

  it('sets the same floors for city-district, which the cached gateway and limits G and G bare serve too (the same requests as limit C)', () => {
    const ratios = evaluate(
      [
        result('limit-c-city-district', { 'limit-c': 250 }),
        result('limit-g-city-district', { 'limit-g': 150 }),
        result('limit-g-bare-city-district', { 'limit-g-bare': 50 }),
        result('gateway-cached-city-district', { 'gateway-cached': 180 }),
      ],
      {},
      2,
    ).ratios;
    assert.equal(ratios['limit G CPU city-district / limit C, closed loop'], 0.6);
    assert.equal(ratios['limit G bare CPU city-district / limit C, closed loop'], 0.2);
    assert.equal(ratios['gateway cached hit CPU city-district / limit G, closed loop'], 1.2);
    assert.equal(ratios['gateway cached hit CPU city-district / limit C, closed loop'], 0.72);
  });

  it('judges the added latency beyond the control pair, from the rounds\' medians, else the difference of the two', () => {
    const latency = (id: string, p50Ms: number, p99Ms: number, addedMs?: { p50: number; p99: number }): ScenarioResult => ({
      id,
      label: id,
      mode: 'fixed',
      rate: 500,
      load: { rps: 500, requests: 5000, non2xx: 0, errors: 0, p50Ms, p99Ms, meanMs: p50Ms, statuses: { 200: 5000 } },
      ...(addedMs === undefined ? {} : { addedMs }),
    });
    const inRounds = evaluate(
      [
        latency('latency-direct-by-id', 2, 9),
        latency('latency-gateway-by-id', 3, 20, { p50: 0.7, p99: 3 }),
        latency('latency-direct-beside-limit-c-lean', 1.5, 8),
        latency('latency-limit-c-lean', 1.9, 12, { p50: 0.2, p99: 1 }),
        latency('latency-direct-beside-direct', 1.5, 8),
        latency('latency-direct-again', 1.6, 11, { p50: 0.2, p99: 1 }),
      ],
      {},
      2,
    );
    assert.equal(inRounds.ratios['gateway added p50 ms, by-id'], 0.7);
    assert.equal(inRounds.ratios['limit C′ added p50 ms, by-id'], 0.2);
    assert.deepEqual(
      inRounds.targets.filter((t) => t.name.startsWith('gateway added')).map((t) => [t.reached, t.met]),
      [
        ['0.50 ms', true],
        ['2.00 ms', true],
      ],
    );
    // One pair measured once (no rounds): the difference of the two; no control, no verdict.
    const once = evaluate([latency('latency-direct-city-district', 2, 9), latency('latency-gateway-city-district', 2.75, 13)], {}, 2);
    assert.equal(once.ratios['gateway added p50 ms, city-district'], 0.75);
    assert.equal(once.ratios['gateway added p99 ms, city-district'], 4);
    assert.equal(once.targets.filter((t) => t.name.startsWith('gateway added')).length, 0);
  });
});

describe('latency pairs measured in rounds (bench/harness/context.ts measureFixedPairsInTurns)', function () {
  this.timeout(30_000);

  it('records each pair\'s second with the median of what it added over the first, round by round', async () => {
    // Two servers on 127.0.0.1: one answers at once, the other 6 ms later; the second of each pair is the slow one.
    const servers = [0, 6].map((delayMs) => createServer((_req, res) => void setTimeout(() => res.end('{}'), delayMs)));
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    try {
      const [fast, slow] = servers.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`) as [string, string];
      const target = (origin: string) => ({ origin, shape: { method: 'GET' as const, target: '/' }, headers: () => ({}) });
      const progress: string[] = [];
      const ctx = { config: { rounds: 3, warmupS: 0, durationS: 0.4, rate: 100, connections: 50 }, results: [], progress: (line: string) => progress.push(line) } as unknown as RunContext;
      const results = await measureFixedPairsInTurns(ctx, [
        [
          { id: 'a', label: 'fast', target: target(fast) },
          { id: 'b', label: 'slow', target: target(slow) },
        ],
        [
          { id: 'c', label: 'fast again', target: target(fast) },
          { id: 'd', label: 'fast too', target: target(fast) },
        ],
      ]);
      assert.deepEqual(
        results.map((r) => [r.id, r.label, r.load.requests]),
        [
          ['a', 'fast, median of 3', 40],
          ['b', 'slow, median of 3', 40],
          ['c', 'fast again, median of 3', 40],
          ['d', 'fast too, median of 3', 40],
        ],
      );
      assert.equal(ctx.results.length, 4);
      const [, slowSide, , fastSide] = results as [ScenarioResult, ScenarioResult, ScenarioResult, ScenarioResult];
      assert.ok(slowSide.addedMs !== undefined && slowSide.addedMs.p50 >= 3 && slowSide.addedMs.p50 < 50, JSON.stringify(slowSide.addedMs));
      // The recorded loads are of the median round: their difference is the median added p50.
      assert.equal(slowSide.load.p50Ms - (results[0] as ScenarioResult).load.p50Ms, slowSide.addedMs.p50);
      assert.ok(fastSide.addedMs !== undefined && Math.abs(fastSide.addedMs.p50) < 3, JSON.stringify(fastSide.addedMs));
      assert.equal(results[0]?.addedMs, undefined);
      // Two progress lines a pair a round: what it runs, and what the second added.
      assert.equal(progress.length, 12);
      assert.match(progress[1] ?? '', /slow added p50 \d+\.\d\d ms, p99 -?\d+\.\d\d ms/);
    } finally {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    }
  });
});

describe('the open-loop pacer (bench/harness/load.ts fixedRates)', function () {
  this.timeout(30_000);

  it('keeps at most `connections` requests in flight to a server behind its pace, and counts the wait in the latency', async () => {
    // A server that needs 50 ms an answer: at 200 req/s with 3 connections it answers at most 60/s, so it falls behind.
    let inFlight = 0;
    let most = 0;
    const server = createServer((_req, res) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight -= 1;
        res.end('{}');
      }, 50);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const [result] = await fixedRates([{ origin, shape: { method: 'GET', target: '/' }, headers: () => ({}) }], 200, 0.3, 3);
      assert.equal(result?.requests, 60);
      assert.equal(result.errors, 0);
      assert.equal(most, 3);
      // The last of 60 requests waited behind 19 rounds of three: its latency counts that wait from its scheduled time.
      assert.ok(result.p99Ms > 500, `p99 ${result.p99Ms} ms`);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('wake-ups and system calls per answer (bench/harness/processes.ts kernelCounts)', function () {
  this.timeout(30_000);

  it('reads the main thread\'s wake-ups and the process\'s read and write calls from /proc, and nothing of a process that is gone', async () => {
    const before = await kernelCounts(process.pid);
    const fd = openSync('/dev/null', 'r+');
    try {
      const one = Buffer.alloc(1);
      for (let i = 0; i < 300; i += 1) writeSync(fd, one);
      for (let i = 0; i < 100; i += 1) readSync(fd, one);
    } finally {
      closeSync(fd);
    }
    // Five sleeps of the event loop, each ended by its timer.
    for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    const after = await kernelCounts(process.pid);
    assert.ok(before !== undefined && after !== undefined);
    // Told apart: 300 writes, 100 reads (and the few of reading /proc and of the timers).
    assert.ok(after.writes - before.writes >= 300, `${after.writes - before.writes} writes`);
    assert.ok(after.reads - before.reads >= 100 && after.reads - before.reads < 300, `${after.reads - before.reads} reads`);
    assert.ok(after.wakeUps - before.wakeUps >= 5, `${after.wakeUps - before.wakeUps} wake-ups`);
    assert.ok(after.preempted >= before.preempted);
    // A pid no process has (above pid_max's largest default).
    assert.equal(await kernelCounts(2 ** 22 + 1), undefined);
  });

  it('records each server\'s counts per answer, the median of the rounds, and the report prints them beside the CPU', async () => {
    const server = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const ctx = { config: { rounds: 3, warmupS: 0, durationS: 0.3, connections: 4 }, results: [], progress: () => undefined } as unknown as RunContext;
      const target = { origin, shape: { method: 'GET' as const, target: '/' }, headers: () => ({}) };
      const [measured] = await measureClosedInTurns(ctx, [{ id: 'local', label: 'local server', target, servers: { self: process.pid } }]);
      const counts = measured?.kernelPerRequest?.self;
      assert.ok(counts !== undefined, JSON.stringify(measured));
      // The client and the server are this process: each answer is a request written and read, and an answer
      // written and read, on kept-alive connections.
      assert.ok(counts.reads >= 2 && counts.reads < 10, `${counts.reads} reads per answer`);
      assert.ok(counts.writes >= 2 && counts.writes < 10, `${counts.writes} writes per answer`);
      assert.ok(counts.wakeUps >= 0 && counts.wakeUps < 10 && counts.preempted >= 0, JSON.stringify(counts));
      const report = { machine: machine(2), results: ctx.results, facts: {}, ...evaluate(ctx.results, {}, 2) };
      const row = new RegExp(`local server, median of 3 +4 conn +self +${counts.wakeUps.toFixed(2)} +${counts.preempted.toFixed(2)} +${counts.reads.toFixed(2)} +${counts.writes.toFixed(2)}`);
      assert.match(formatReport(report), row);
      assert.match(resultsMarkdown(report, loadBenchConfig({}), new Date()), new RegExp(`\\| local server, median of 3 \\| 4 conn \\| self \\| ${counts.wakeUps.toFixed(2)} \\| ${counts.preempted.toFixed(2)} \\| ${counts.reads.toFixed(2)} \\| ${counts.writes.toFixed(2)} \\|`));
      // Without counts (a stack the bench did not start gives no pids), neither prints the table.
      const uncounted = { ...report, results: report.results.map(({ kernelPerRequest: _, ...rest }) => rest) };
      assert.doesNotMatch(resultsMarkdown(uncounted, loadBenchConfig({}), new Date()), /Wake-ups and system calls/);
      assert.doesNotMatch(formatReport(uncounted), /from \/proc/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('resident memory by scenario (bench/harness/processes.ts memorySampler)', function () {
  this.timeout(30_000);

  it('keeps each scenario\'s peak and names the one during which the run\'s peak was reached', async () => {
    const memory = memorySampler({ self: process.pid }, 10);
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // Until `id` has samples of its own, however slow a busy machine's reads (a read that straddles the
    // scenario's end is not kept), and then a little longer.
    const sampled = async (id: string) => {
      for (let i = 0; memory.peaksByScenario().get(id) === undefined; i += 1) {
        assert.ok(i < 1000, `no sample during '${id}'`);
        await wait(10);
      }
      await wait(50);
    };
    let held: Buffer | undefined;
    try {
      const quiet = memory.during(['quiet']);
      await sampled('quiet');
      quiet.end();
      await wait(50);
      const heavy = memory.during(['heavy', 'heavy-beside']);
      // 128 MB written, so resident: the peak of this scenario, and of the run.
      held = Buffer.alloc(128 * 2 ** 20, 1);
      // A sample begun before the buffer and read after it is not kept; one begun after it is this peak.
      await sampled('heavy');
      heavy.end();
      const byScenario = memory.peaksByScenario();
      const [quietMb, heavyMb] = [byScenario.get('quiet')?.self, byScenario.get('heavy')?.self];
      assert.ok(quietMb !== undefined && heavyMb !== undefined, JSON.stringify([...byScenario]));
      assert.ok(heavyMb - quietMb > 100, `${quietMb} MB, then ${heavyMb} MB`);
      assert.equal(byScenario.get('heavy-beside')?.self, heavyMb);
      assert.deepEqual(memory.peakSetBy().self, ['heavy', 'heavy-beside']);
      assert.equal(memory.peaks().self, heavyMb);
    } finally {
      memory.stop();
      held = undefined;
    }
    assert.equal(held, undefined);
  });
  it('keeps no sample during whose read the scenario changed: it may belong to either side', async () => {
    // The reads answer when the test says; a read begun in one scenario ends in the next.
    const pending: ((mb: number) => void)[] = [];
    const memory = memorySampler({ self: 1 }, 5, () => new Promise((resolve) => pending.push(resolve)));
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const nextRead = async () => {
      while (pending.length === 0) await wait(2);
      return pending.shift() as (mb: number) => void;
    };
    try {
      const first = memory.during(['first']);
      const straddling = await nextRead();
      first.end();
      const second = memory.during(['second']);
      straddling(500);
      pending.splice(0).forEach((answer) => answer(1)); // begun before 'second' too
      (await nextRead())(100);
      await wait(0);
      second.end();
      assert.deepEqual([...memory.peaksByScenario()], [['second', { self: 100 }]]);
      assert.deepEqual(memory.peakSetBy().self, ['second']);
      assert.equal(memory.peaks().self, 100);
    } finally {
      memory.stop();
    }
  });
});

describe('pnpm bench: the services run with their images NODE_OPTIONS and CMD flags', () => {
  it('reads the same value from each Dockerfile as the deployment checks do', async () => {
    const { imageNodeOptions } = await import('../bench/harness/stack.ts');
    const { DEPLOYABLES, imageEnv } = await import('./deploy-support/deployables.ts');
    for (const d of DEPLOYABLES) {
      const fromImage = imageEnv(root, d).get('NODE_OPTIONS');
      assert.ok(fromImage !== undefined && 'literal' in fromImage, `${d.name}'s image sets no NODE_OPTIONS`);
      assert.equal(imageNodeOptions(d.name), fromImage.literal);
    }
  });

  it('starts every process with its image\'s allocator settings (MALLOC_ARENA_MAX), which the benchmark\'s own environment may replace', async () => {
    const { imageAllocatorEnv } = await import('../bench/harness/stack.ts');
    const { DEPLOYABLES, imageEnv } = await import('./deploy-support/deployables.ts');
    const own = process.env.MALLOC_ARENA_MAX;
    try {
      delete process.env.MALLOC_ARENA_MAX;
      for (const d of DEPLOYABLES) {
        const fromImage = imageEnv(root, d).get('MALLOC_ARENA_MAX');
        assert.ok(fromImage !== undefined && 'literal' in fromImage, `${d.name}'s image sets no MALLOC_ARENA_MAX`);
        assert.deepEqual(imageAllocatorEnv(d.name), { MALLOC_ARENA_MAX: fromImage.literal });
      }
      process.env.MALLOC_ARENA_MAX = '1';
      assert.deepEqual(imageAllocatorEnv('gateway'), { MALLOC_ARENA_MAX: '1' });
    } finally {
      if (own === undefined) delete process.env.MALLOC_ARENA_MAX;
      else process.env.MALLOC_ARENA_MAX = own;
    }
  });

  it('passes the flags of each image\'s CMD line too (the gateway\'s --heap-growing-percent, --no-maglev)', async () => {
    const { imageNodeArgs } = await import('../bench/harness/stack.ts');
    const { DEPLOYABLES, parseDockerfile, readDockerfile } = await import('./deploy-support/deployables.ts');
    for (const d of DEPLOYABLES) {
      const cmd = parseDockerfile(readDockerfile(root, d)).at(-1)?.instructions.find((i) => i.op === 'CMD')?.args ?? '';
      assert.deepEqual(imageNodeArgs(d.name), (JSON.parse(cmd) as string[]).slice(1, -1), `${d.name}: ${cmd}`);
    }
    assert.deepEqual(imageNodeArgs('gateway'), ['--heap-growing-percent=20', '--no-maglev']);
    assert.deepEqual(imageNodeArgs('risk'), ['--no-maglev']);
  });
});

describe('pnpm bench:log-writes (bench/tools/log-writes.ts)', function () {
  this.timeout(60_000);

  it('writes every line of each measurement to the file it is given and prints CPU per line for 1, 3 and 10 lines a write', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'log-writes-'));
    const file = join(dir, 'lines.log');
    try {
      const { code, output } = await runScript(['bench/tools/log-writes.ts', file], { BENCH_LOG_LINES: '300' });
      assert.equal(code, 0, output);
      const rows = [...output.matchAll(/^round (\d), +(\d+) lines a write: fs\.write +(\d+\.\d), fs\.writeSync +(\d+\.\d)$/gm)];
      assert.deepEqual(
        rows.map((row) => `${row[1]}:${row[2]}`),
        ['1:1', '1:3', '1:10', '2:1', '2:3', '2:10', '3:1', '3:3', '3:10'],
        output,
      );
      // 3 rounds × 3 batch sizes × (300 written asynchronously + 300 synchronously), each the whole line.
      const lines = (await readFile(file, 'utf8')).split('\n').filter((line) => line !== '');
      assert.equal(lines.length, 5400);
      assert.ok(lines.every((line) => (JSON.parse(line) as { msg?: string }).msg === 'GET 200'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('pnpm bench:perf-summary (bench/tools/perf-summary.ts)', () => {
  it('files each perf row under its kind of work: the kernel, JIT code, megamorphic loads, the GC and the compiler on any thread', () => {
    assert.equal(kindOf('[kernel.kallsyms]', '[k] tcp_sendmsg_locked'), 'kernel');
    assert.equal(kindOf('[JIT] tid 6436', "[.] JS:*'admit file:///gateway/dist/src/admission/admission.js:149:20"), 'JIT-compiled JavaScript');
    assert.equal(kindOf('node', '[.] Builtins_KeyedLoadIC_Megamorphic'), 'V8 builtins: megamorphic property access');
    assert.equal(kindOf('node', '[.] Builtins_LoadIC'), 'V8 builtins: property access (inline caches)');
    assert.equal(kindOf('node', '[.] Builtins_FulfillPromise'), 'V8 builtins: promises and async functions');
    assert.equal(kindOf('node', '[.] Builtins_StringAdd_CheckNone'), 'V8 builtins: the rest');
    assert.equal(kindOf('node', '[.] v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>'), 'garbage collection');
    assert.equal(kindOf('node', '[.] v8::internal::compiler::GraphReducer::ReduceTop'), 'optimising compiler');
    assert.equal(kindOf('libc.so.6', '[.] _int_malloc'), 'libc');
    assert.equal(kindOf('node', '[.] llhttp__internal__run'), 'V8 runtime, Node and the rest');
  });

  it('reads perf report\'s tab-separated rows and its event count, and sums CPU time per kind and per thread', () => {
    const text = [
      '# Samples: 3K of event \'cpu-clock\'',
      '# Event count (approx.): 2000000000',
      '#',
      '    50.00%\tMainThread\t[kernel.kallsyms]\t[k] pvm_irq_enable',
      '    30.00%\tMainThread\tnode\t[.] Builtins_LoadIC_Megamorphic',
      '    20.00%\tV8Worker\tnode\t[.] v8::internal::Scavenger::ScavengePage',
      '',
    ].join('\n');
    const { rows, totalUs } = parseReport(text);
    assert.equal(totalUs, 2_000_000);
    assert.equal(rows.length, 3);
    const { kinds, threads } = summarise(rows, totalUs);
    assert.equal(kinds.get('kernel'), 1_000_000);
    assert.equal(kinds.get('V8 builtins: megamorphic property access'), 600_000);
    assert.equal(kinds.get('garbage collection'), 400_000);
    assert.equal(kinds.get('JIT-compiled JavaScript'), 0);
    assert.deepEqual([...threads], [['MainThread', 1_600_000], ['V8Worker', 400_000]]);
  });
});
