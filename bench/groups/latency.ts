// Group `latency`: p50/p99 at the light fixed rate (BENCH_RATE), each pair side by side, the pairs by
// turns (BENCH_ROUNDS, medians of what the second of a pair adds): by/id direct and through the gateway;
// direct and through limit C′ and E′ (one more hop of forwarding, and the contract's checks on it), limit G
// (those checks, then the answer from memory) and limit G′ (G's work with none of the packages' code);
// by/id direct and through a gateway answering from its station cache; city-district direct and through the
// gateway; and the control, by/id direct beside itself.
import { type PairSide, type RunContext, directTarget, measureFixedPairsInTurns, needStack, signedTarget } from '../harness/context.ts';
import { type StartedProcess, freePort } from '@platform/stack';
import { startForwardingLimits, stopAll } from '../harness/limit-servers.ts';
import type { RequestShape } from '../harness/signer.ts';
import { byId, cityDistrict } from './requests.ts';

export async function latencyScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  const limits = await startForwardingLimits(ctx, stack);
  const [, limitCLean, limitELean, limitG, , , limitGLean] = limits;
  let cached: StartedProcess | undefined;
  try {
    const direct = (id: string, name: string, shape: RequestShape): PairSide => ({ id: `latency-direct-${id}`, label: `latency direct: ${name}`, target: directTarget(stack.riskUrl, shape) });
    const byIdShape = byId(session.token);
    const pairs: Array<readonly [PairSide, PairSide]> = [
      [direct('by-id', 'by/id', byIdShape), { id: 'latency-gateway-by-id', label: 'latency gateway: by/id', target: await signedTarget(ctx, stack.gatewayUrl, byIdShape) }],
    ];
    for (const [limit, label, signed] of [
      [limitCLean, 'limit C′: node:http + undici', false],
      [limitELean, 'limit E′: the contract\'s checks on C′', true],
      // A cached hit's floor: E′'s checks, then the answer from memory.
      [limitG, 'limit G: E′\'s checks and the gateway\'s output, the answer from memory', true],
      // The same work with none of the packages' code on its path.
      [limitGLean, 'limit G′: G\'s work with none of the packages\' code on its path', true],
    ] as const) {
      if (limit === undefined) continue;
      const target = signed ? await signedTarget(ctx, limit.url, byIdShape) : directTarget(limit.url, byIdShape);
      pairs.push([direct(`beside-${limit.cpuName}`, 'by/id', byIdShape), { id: `latency-${limit.cpuName}`, label: `latency ${label}${limit === limitG || limit === limitGLean ? ': by/id' : ' → risk by/id'}`, target }]);
    }
    // By/id answered from a gateway's station cache (CONTRACT.md part 17).
    cached = await stack.start('gateway', { as: 'gateway-cached', env: { GATEWAY_CACHE_MB: '32', GATEWAY_MANAGEMENT_PORT: String(await freePort()) } });
    pairs.push([direct('beside-gateway-cached', 'by/id', byIdShape), { id: 'latency-gateway-cached-by-id', label: 'latency gateway, cached hits: by/id', target: await signedTarget(ctx, cached.url, byIdShape) }]);
    const city = cityDistrict(session.token);
    pairs.push([direct('city-district', 'by/city-district', city), { id: 'latency-gateway-city-district', label: 'latency gateway: by/city-district', target: await signedTarget(ctx, stack.gatewayUrl, city) }]);
    // The control: by/id direct beside itself, what the measure adds between two identical targets.
    pairs.push([direct('beside-direct', 'by/id', byIdShape), direct('again', 'by/id, again', byIdShape)]);
    await measureFixedPairsInTurns(ctx, pairs);
  } finally {
    await stopAll([...limits, cached]);
  }
}
