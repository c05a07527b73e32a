// Group `pipeline` (only when asked for): by/id at one pace (BENCH_EQUAL_RATE), by turns, through every
// checking limit and the gateway: limit D (the signature and one nonce claim behind Express), limit E (the
// gateway's checks behind Express, node:http forwarding), limit E′ (the same checks on C′) and the
// gateway. What each layer of the gateway's work costs, without the rest of the gateway group.
import { type RunContext, measureClosedInTurns, needStack, signedTarget } from '../harness/context.ts';
import { startLimits, stackOptions, stopAll } from '../harness/limit-servers.ts';
import { byId } from './requests.ts';

export async function pipelineScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  if (stack.redisPrefix === undefined) throw new Error('the pipeline group needs a stack of its own (the checking limits share its Redis prefix)');
  const options = stackOptions(ctx, stack, stack.redisPrefix);
  const limits = await startLimits(ctx, [
    ['contract', { target: stack.riskUrl, 'redis-url': ctx.config.redisUrl, 'key-secret': ctx.config.keySecret }],
    ['checks', options],
    ['lean-checks', options],
  ]);
  const rate = ctx.config.equalRate;
  const labels = ['limit D: signature and nonce behind Express', 'limit E: the gateway\'s checks behind Express', 'limit E′: the gateway\'s checks on C′'];
  try {
    const scenarios = [];
    for (const [i, limit] of limits.entries()) {
      scenarios.push({ id: `pipeline-${limit.cpuName}`, label: `${labels[i] ?? limit.cpuName} → risk by/id (signed), at ${rate} req/s`, target: await signedTarget(ctx, limit.url, byId(session.token)), servers: { [limit.cpuName]: limit.pid } });
    }
    scenarios.push({ id: 'pipeline-gateway', label: `gateway: by/id (signed), at ${rate} req/s`, target: await signedTarget(ctx, stack.gatewayUrl, byId(session.token)), servers: { gateway: stack.gatewayPid } });
    await measureClosedInTurns(ctx, scenarios, rate);
  } finally {
    await stopAll(limits);
  }
}
