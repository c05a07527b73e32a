// Group `gateway`: both lookups through the gateway (every request freshly signed), each beside the limits
// of the same request: limit C (Express + http-proxy-middleware, the libraries' forwarding), limit C′ (a
// plain node:http server on undici's pool: forwarding alone), limit E′ (the contract's checks, the gateway's
// own admission included, on C′) and limit E′ enveloped (E′ writing what the gateway writes for every
// request: its envelope, the quota headers, the trace context); and both through a second gateway whose station
// cache answers them (CONTRACT.md part 17: hits after every check), beside limit G (E′'s checks and the
// gateway's output, then the answer from memory) and limit G bare (a hit's round trip alone: the request, the
// admission, the answer). Every process serves both lookups, in the same order: a process that has served
// only GETs runs other optimised code than one that has served POSTs too (limit C answered by/id for 120-165
// µs of CPU in processes that had served nothing else, 220-350 after rounds of city-district), so a ratio of
// two processes is only fair when both served the same requests. By turns, closed loop, then at one pace; then 50 signed answers checked for `Connection: close`.
import { request } from 'node:http';
import { type RunContext, directTarget, measureClosedInTurns, needStack, signedTarget } from '../harness/context.ts';
import { freePort } from '@platform/stack';
import { startForwardingLimits, stopAll } from '../harness/limit-servers.ts';
import type { RequestShape } from '../harness/signer.ts';
import { closedLoop } from '../harness/load.ts';
import { LOOKUPS, byId } from './requests.ts';

/** Seconds of closed loop each scenario gets before the first round. */
const PRIME_S = 1;

export async function gatewayScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  const started = await startForwardingLimits(ctx, stack);
  const [limitC, limitCLean, limitELean, limitG, limitEnveloped, limitGBare, limitGLean] = started;
  // A gateway with its station cache (CONTRACT.md part 17), warmed by the first request of each lookup: both
  // answered from memory after every check. The stack's own gateway runs without one.
  const cached = await stack.start('gateway', { as: 'gateway-cached', env: { GATEWAY_CACHE_MB: '32', GATEWAY_MANAGEMENT_PORT: String(await freePort()) } }).catch(async (err: unknown) => {
    await stopAll(started);
    throw err;
  });
  try {
    const scenarios = async (suffix: string) => {
      const list = [];
      for (const [lookup, shape] of Object.entries(LOOKUPS)) {
        const request = shape(session.token);
        for (const limit of [limitC, limitCLean]) {
          if (limit === undefined) continue;
          const name = limit === limitC ? 'limit C: Express + http-proxy-middleware' : 'limit C′: node:http + undici, no checks';
          list.push({ id: `${limit.cpuName}-${lookup}${suffix}`, label: `${name} → risk ${lookup}`, target: directTarget(limit.url, request), servers: { [limit.cpuName]: limit.pid } });
        }
        if (limitELean !== undefined) {
          list.push({ id: `limit-e-lean-${lookup}${suffix}`, label: `limit E′: the contract's checks on C′ → risk ${lookup} (signed)`, target: await signedTarget(ctx, limitELean.url, request), servers: { 'limit-e-lean': limitELean.pid } });
        }
        if (limitEnveloped !== undefined) {
          const label = `limit E′ enveloped: E′ and the gateway's per-request output → risk ${lookup} (signed)`;
          list.push({ id: `${limitEnveloped.cpuName}-${lookup}${suffix}`, label, target: await signedTarget(ctx, limitEnveloped.url, request), servers: { [limitEnveloped.cpuName]: limitEnveloped.pid } });
        }
        list.push({ id: `gateway-${lookup}${suffix}`, label: `gateway: ${lookup} (signed)`, target: await signedTarget(ctx, stack.gatewayUrl, request), servers: { gateway: stack.gatewayPid } });
        // Limits G and G bare answer station 17130's JSON to either lookup: a little less than a city-district hit writes.
        if (limitG !== undefined) {
          list.push({ id: `limit-g-${lookup}${suffix}`, label: `limit G: E′'s checks and the gateway's output, the answer from memory: ${lookup} (signed)`, target: await signedTarget(ctx, limitG.url, request), servers: { 'limit-g': limitG.pid } });
        }
        if (limitGBare !== undefined) {
          const label = `limit G bare: a hit's round trip alone (the request, the admission, the answer from memory): ${lookup}`;
          list.push({ id: `limit-g-bare-${lookup}${suffix}`, label, target: directTarget(limitGBare.url, request), servers: { [limitGBare.cpuName]: limitGBare.pid } });
        }
        if (limitGLean !== undefined) {
          const label = `limit G′: G's work with none of the packages' code on its path: ${lookup} (signed)`;
          list.push({ id: `${limitGLean.cpuName}-${lookup}${suffix}`, label, target: await signedTarget(ctx, limitGLean.url, request), servers: { [limitGLean.cpuName]: limitGLean.pid } });
        }
        list.push({ id: `gateway-cached-${lookup}${suffix}`, label: `gateway, cached hits: ${lookup} (signed)`, target: await signedTarget(ctx, cached.url, request), servers: { 'gateway-cached': cached.pid } });
      }
      return list;
    };
    // BENCH_GATEWAY_SCENARIOS: only the named processes' scenarios are measured (every process is primed all the same).
    const { gatewayScenarios: only } = ctx.config;
    const measured = (list: Awaited<ReturnType<typeof scenarios>>) => (only === undefined ? list : list.filter((scenario) => Object.keys(scenario.servers).some((name) => only.has(name))));
    const closed = await scenarios('');
    // Every process has served both lookups before any is measured (bench/README.md, "The same requests").
    for (const scenario of closed) {
      ctx.progress(`${scenario.label}: served for ${PRIME_S} s before any round`);
      await closedLoop(scenario.target, ctx.config.connections, PRIME_S);
    }
    await measureClosedInTurns(ctx, measured(closed));
    await measureClosedInTurns(ctx, measured(await scenarios('-pace')), ctx.config.equalRate);
  } finally {
    await stopAll([...started, cached]);
  }
  ctx.facts.gatewayConnectionClose = await countConnectionClose(ctx, stack.gatewayUrl, byId(session.token));
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
