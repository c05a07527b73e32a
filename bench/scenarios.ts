import { request } from 'node:http';
import { CITY_DISTRICT_BODY, type PairSide, type RunContext, STATION_ID, directTarget, measureClosed, measureClosedInTurns, measureFixed, measureFixedPairsInTurns, needStack, signedTarget, vouchedTarget } from './context.ts';
import { type StartedProcess, freePort, startProcess, untilOk } from '@platform/stack';
import type { RequestShape } from './signer.ts';
import type { Stack } from './stack.ts';

const BY_ID = `/v1/weather-stations/by/id/${STATION_ID}`;

function byId(bearer: string | undefined): RequestShape {
  return { method: 'GET', target: BY_ID, bearer };
}

function cityDistrict(bearer: string): RequestShape {
  return { method: 'POST', target: '/v1/weather-stations/by/city-district', body: CITY_DISTRICT_BODY, bearer };
}

/** A helper server of the benchmark (bench/limit-server.ts), its log in the run's directory, once `path` answers 200. */
async function startLimitServer(ctx: RunContext, name: string, args: readonly string[], port: number, path: string): Promise<StartedProcess> {
  const profile = ctx.config.cpuProf.has(name) ? ['--cpu-prof', `--cpu-prof-dir=${ctx.logDir}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
  const server = startProcess({ name, entry: 'bench/limit-server.ts', args, env: process.env, nodeArgs: profile, url: `http://127.0.0.1:${port}`, output: { dir: ctx.logDir } });
  if (!(await untilOk(`${server.url}${path}`, Date.now() + 15_000, server))) {
    await server.stop();
    throw new Error(`${name} never answered ${path}; see ${server.log}`);
  }
  return server;
}

/**
 * Limit E (bench/limit-server.ts `checks`) in front of the stack's risk, on its identity's keys and in its
 * Redis prefix, vouching for the token with the stack's assertion key as the gateway does (risk then skips
 * its revocation read behind limit E as behind the gateway).
 */
async function startLimitE(ctx: RunContext, stack: Stack, redisPrefix: string): Promise<StartedProcess> {
  const port = await freePort();
  const jwks = new URL('/.well-known/jwks.json', stack.identityUrl).href;
  const vouch = stack.assertionKey === undefined ? [] : [stack.assertionKey];
  return startLimitServer(ctx, 'limit-e', ['checks', String(port), stack.riskUrl, ctx.config.redisUrl, ctx.config.keySecret, redisPrefix, jwks, ...vouch], port, '/health/live');
}

/** Limits A and B: each started alone in its own process, measured, stopped. */
export async function limitScenarios(ctx: RunContext): Promise<void> {
  for (const [mode, id, label] of [
    ['node', 'limit-a', 'limit A: bare node:http'],
    ['express', 'limit-b', 'limit B: bare Express 5'],
  ] as const) {
    const port = await freePort();
    const server = await startLimitServer(ctx, id, [mode, String(port)], port, BY_ID);
    try {
      await measureClosed(ctx, id, label, directTarget(server.url, byId(undefined)), { servers: { [id]: server.pid } });
    } finally {
      await server.stop();
    }
  }
}

/** Limit F (bench/limit-server.ts `bearer`): limit B behind risk's bearer check, on the stack's identity keys and in its Redis prefix. */
async function startLimitF(ctx: RunContext, stack: Stack, redisPrefix: string): Promise<StartedProcess> {
  const port = await freePort();
  const jwks = new URL('/.well-known/jwks.json', stack.identityUrl).href;
  return startLimitServer(ctx, 'limit-f', ['bearer', String(port), '-', ctx.config.redisUrl, '-', redisPrefix, jwks], port, '/health/live');
}

/**
 * Risk direct: both lookups with a bearer token, closed loop. By/id by turns (BENCH_ROUNDS rounds, the
 * medians) with limit B, the target's floor, and limit F, what a direct call must do before it answers;
 * then the three at one pace, by turns too.
 */
export async function riskScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  const servers = { risk: stack.riskPid };
  await measureClosed(ctx, 'risk-city-district', 'risk direct: by/city-district', directTarget(stack.riskUrl, cityDistrict(session.token)), { servers });
  const port = await freePort();
  const limitB = await startLimitServer(ctx, 'limit-b', ['express', String(port)], port, BY_ID);
  // Limit F needs the stack's own Redis prefix (the session's revocations); not against an external stack.
  const limitF = stack.redisPrefix === undefined ? undefined : await startLimitF(ctx, stack, stack.redisPrefix).catch(async (err: unknown) => {
    await limitB.stop();
    throw err;
  });
  try {
    const directById = directTarget(stack.riskUrl, byId(session.token));
    const limits = (suffix: string) => [
      { id: `limit-b-${suffix}`, label: 'limit B: bare Express 5', target: directTarget(limitB.url, byId(undefined)), servers: { 'limit-b': limitB.pid } },
      ...(limitF === undefined
        ? []
        : [{ id: `limit-f-${suffix}`, label: 'limit F: limit B behind risk\'s bearer check (token, revocations in Redis)', target: directTarget(limitF.url, byId(session.token)), servers: { 'limit-f': limitF.pid } }]),
    ];
    // By/id as a client calls it directly (risk reads the token's revocations) and as the gateway calls it
    // (its assertion vouches for the token: no revocation read, CONTRACT.md part 10). Behind the gateway
    // itself risk runs at a third of this rate, where its CPU per answer is not comparable with limit B's.
    await measureClosedInTurns(ctx, [
      ...limits('in-turns'),
      { id: 'risk-by-id', label: 'risk direct: by/id', target: directById, servers },
      ...(stack.assertionKey === undefined
        ? []
        : [{ id: 'risk-vouched-by-id', label: 'risk vouched: by/id (the gateway\'s assertion)', target: vouchedTarget(stack.riskUrl, byId(session.token), stack.assertionKey), servers }]),
    ]);
    // And at one pace (BENCH_EQUAL_RATE): under the closed loop limit B answers ~35,000 req/s, risk ~11,000,
    // and a process answering faster shares each wake-up among more answers.
    await measureClosedInTurns(ctx, [...limits('equal-rate'), { id: 'risk-by-id-equal-rate', label: 'risk direct: by/id', target: directById, servers }], ctx.config.equalRate);
  } finally {
    await Promise.all([limitB.stop(), limitF?.stop()]);
  }
}

/**
 * The same two lookups through the gateway, each request freshly signed; and limit C: by/id through a
 * bare Express + http-proxy-middleware proxy to the same risk service, unsigned (the proxying floor); and
 * limit E, the gateway's checks without its pipeline. The four by turns (BENCH_ROUNDS rounds, the
 * medians), then limit C, limit E and the gateway by/id at one pace by turns; limit D before them, once.
 */
export async function gatewayScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  // Limit D: the contract's own per-request work (signature, digest, one Redis claim, forwarding) and no more.
  const floorPort = await freePort();
  const floor = await startLimitServer(ctx, 'limit-d', ['contract', String(floorPort), stack.riskUrl, ctx.config.redisUrl, ctx.config.keySecret], floorPort, '/health/live');
  try {
    const floorServers = { 'limit-d': floor.pid, risk: stack.riskPid };
    await measureClosed(ctx, 'limit-d-by-id', 'limit D: the contract\'s floor → risk by/id (signed)', await signedTarget(ctx, floor.url, byId(session.token)), { servers: floorServers });
    await measureClosed(ctx, 'limit-d-city-district', 'limit D: the contract\'s floor → risk by/city-district (signed)', await signedTarget(ctx, floor.url, cityDistrict(session.token)), { servers: floorServers });
    // At limit C's pace too: the floor and the gateway compared where neither gets more answers per wake-up.
    await measureFixed(ctx, 'limit-d-equal-rate', `limit D: the contract's floor → risk by/id (signed), at ${ctx.config.equalRate} req/s`, await signedTarget(ctx, floor.url, byId(session.token)), ctx.config.equalRate, floorServers);
  } finally {
    await floor.stop();
  }
  // Limit E: limit D with the gateway's own checks (the bearer token, the whole admission), still one flat
  // handler; kept running for the rounds below, where it takes its turns with limit C and the gateway.
  const checks = stack.redisPrefix === undefined ? undefined : await startLimitE(ctx, stack, stack.redisPrefix);
  const checksServers = { 'limit-e': checks?.pid, risk: stack.riskPid };
  try {
    const port = await freePort();
    const proxy = await startLimitServer(ctx, 'limit-c', ['proxy', String(port), stack.riskUrl], port, '/health/live');
    try {
      const limitC = { label: 'limit C: bare Express proxy → risk by/id', target: directTarget(proxy.url, byId(session.token)), servers: { 'limit-c': proxy.pid, risk: stack.riskPid } };
      const servers = { gateway: stack.gatewayPid, risk: stack.riskPid };
      const gatewayById = await signedTarget(ctx, stack.gatewayUrl, byId(session.token));
      // The contract's checks without the gateway's pipeline, by turns with the target's floor and the gateway.
      const limitETarget = checks === undefined ? undefined : await signedTarget(ctx, checks.url, byId(session.token));
      const limitE = (id: string) => (limitETarget === undefined ? [] : [{ id, label: 'limit E: limit D with the gateway\'s checks → risk by/id (signed)', target: limitETarget, servers: checksServers }]);
      await measureClosedInTurns(ctx, [
        { id: 'limit-c', ...limitC },
        ...limitE('limit-e-by-id'),
        { id: 'gateway-by-id', label: 'gateway: by/id (signed)', target: gatewayById, servers },
        { id: 'gateway-city-district', label: 'gateway: by/city-district (signed)', target: await signedTarget(ctx, stack.gatewayUrl, cityDistrict(session.token)), servers },
      ]);
      // Limit C's pace, not the gateway's: CPU per answer of the three at one rate.
      await measureClosedInTurns(
        ctx,
        [{ id: 'limit-c-equal-rate', ...limitC }, ...limitE('limit-e-equal-rate'), { id: 'gateway-by-id-equal-rate', label: 'gateway: by/id (signed)', target: gatewayById, servers }],
        ctx.config.equalRate,
      );
    } finally {
      await proxy.stop();
    }
  } finally {
    await checks?.stop();
  }
  ctx.facts.gatewayConnectionClose = await countConnectionClose(ctx, stack.gatewayUrl, byId(session.token));
}

/**
 * Limit E and the gateway by/id at one pace (BENCH_EQUAL_RATE), by turns (BENCH_ROUNDS rounds, the median
 * of each): what the gateway's pipeline costs beyond its checks, the figure to move when working on it,
 * without the rest of the gateway group (issue 27).
 */
export async function pipelineScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  if (stack.redisPrefix === undefined) throw new Error('the pipeline group needs a stack of its own (limit E shares its Redis prefix)');
  const checks = await startLimitE(ctx, stack, stack.redisPrefix);
  try {
    const rate = ctx.config.equalRate;
    await measureClosedInTurns(
      ctx,
      [
        { id: 'pipeline-limit-e', label: `limit E → risk by/id (signed), at ${rate} req/s`, target: await signedTarget(ctx, checks.url, byId(session.token)), servers: { 'limit-e': checks.pid } },
        { id: 'pipeline-gateway', label: `gateway: by/id (signed), at ${rate} req/s`, target: await signedTarget(ctx, stack.gatewayUrl, byId(session.token)), servers: { gateway: stack.gatewayPid } },
      ],
      rate,
    );
  } finally {
    await checks.stop();
  }
}

/**
 * p50/p99 at the fixed light rate, direct and through the gateway side by side, for both lookups; and by/id
 * direct and through limit C side by side: the latency of one more hop of bare proxying on this machine,
 * the floor of what the gateway adds (the same count of hops: through limit C risk reads the token's
 * revocations itself, behind the gateway the gateway does); limit E, the gateway's checks without its
 * pipeline; and by/id direct beside itself, the measure's own noise. The pairs by turns, BENCH_ROUNDS
 * rounds: the added latencies are the medians of the rounds'.
 */
export async function latencyScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  const port = await freePort();
  const proxy = await startLimitServer(ctx, 'limit-c', ['proxy', String(port), stack.riskUrl], port, '/health/live');
  // Limit E needs the stack's own Redis prefix (the session's revocations); not against an external stack.
  const checks = stack.redisPrefix === undefined ? undefined : await startLimitE(ctx, stack, stack.redisPrefix).catch(async (err: unknown) => {
    await proxy.stop();
    throw err;
  });
  try {
    const direct = (lookup: string, name: string, shape: RequestShape): PairSide => ({ id: `latency-direct-${lookup}`, label: `latency direct: ${name}`, target: directTarget(stack.riskUrl, shape) });
    const gateway = async (lookup: string, name: string, shape: RequestShape): Promise<PairSide> => ({
      id: `latency-gateway-${lookup}`,
      label: `latency gateway: ${name}`,
      target: await signedTarget(ctx, stack.gatewayUrl, shape),
    });
    await measureFixedPairsInTurns(ctx, [
      [direct('by-id', 'by/id', byId(session.token)), await gateway('by-id', 'by/id', byId(session.token))],
      [
        direct('beside-limit-c', 'by/id', byId(session.token)),
        { id: 'latency-limit-c', label: 'latency limit C: bare Express proxy → risk by/id', target: directTarget(proxy.url, byId(session.token)) },
      ],
      ...(checks === undefined
        ? []
        : [
            [
              direct('beside-limit-e', 'by/id', byId(session.token)),
              { id: 'latency-limit-e', label: 'latency limit E: the gateway\'s checks in one handler → risk by/id (signed)', target: await signedTarget(ctx, checks.url, byId(session.token)) },
            ] as const,
          ]),
      [direct('city-district', 'by/city-district', cityDistrict(session.token)), await gateway('city-district', 'by/city-district', cityDistrict(session.token))],
      // The control: by/id direct beside itself, what the measure adds between two identical targets.
      [direct('beside-direct', 'by/id', byId(session.token)), direct('again', 'by/id, again', byId(session.token))],
    ]);
  } finally {
    await Promise.all([proxy.stop(), checks?.stop()]);
  }
}

/**
 * How many of 50 proxied answers carried `Connection: close` (must be none: the client's keep-alive
 * connection would be dropped after every request). Read with node:http, which shows the header as sent.
 */
async function countConnectionClose(ctx: RunContext, origin: string, shape: RequestShape): Promise<number> {
  const headers = await ctx.signer.for(shape);
  let closes = 0;
  for (let i = 0; i < 50; i += 1) {
    closes += await new Promise<number>((resolve, reject) => {
      const req = request(new URL(shape.target, origin), { method: shape.method, headers: headers() }, (res) => {
        res.resume();
        if (res.statusCode !== 200) reject(new Error(`the gateway answered ${res.statusCode}`));
        res.on('end', () => resolve(String(res.headers.connection).toLowerCase() === 'close' ? 1 : 0));
      });
      req.on('error', reject);
      req.end();
    });
  }
  return closes;
}
