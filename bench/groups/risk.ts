// Group `risk`: risk's by/id called directly (it reads the token's revocations) and as the gateway calls
// it (its assertion vouches for the token, CONTRACT.md part 10), by turns with limit B, the floor of its
// answer, limit F, limit B behind what a direct call must do first, and limit F′, limit B behind what a
// vouched call must do first; closed loop, then at one pace.
import { type RunContext, directTarget, measureClosedInTurns, needStack, vouchedTarget } from '../harness/context.ts';
import { type Limit, startLimits, stackOptions, stopAll } from '../harness/limit-servers.ts';
import type { LoadTarget } from '../harness/load.ts';
import { BY_ID, byId } from './requests.ts';

export async function riskScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  const servers = { risk: stack.riskPid };
  // Limit F needs the stack's own Redis prefix (the session's revocations); not against an external stack.
  const prefix = stack.redisPrefix;
  const limits: Limit[] = await startLimits(ctx, [
    ['bare-express', {}, BY_ID],
    ...(prefix === undefined ? [] : ([['bearer', stackOptions(ctx, stack, prefix)]] as const)),
    ...(prefix === undefined || stack.assertionKey === undefined ? [] : ([['vouched-bearer', stackOptions(ctx, stack, prefix)]] as const)),
  ]);
  const [limitB, limitF, limitFVouched] = limits;
  const { assertionKey } = stack;
  try {
    /** A limit's scenario, when it was started: its CPU figure under its own name. */
    const limitScenario = (limit: Limit | undefined, label: string, target: (url: string) => LoadTarget, suffix: string) =>
      limit === undefined ? [] : [{ id: `${limit.cpuName}${suffix}`, label, target: target(limit.url), servers: { [limit.cpuName]: limit.pid } }];
    const scenarios = (suffix: string) => [
      ...limitScenario(limitB, 'limit B: bare Express 5', (url) => directTarget(url, byId(undefined)), suffix),
      ...limitScenario(limitF, 'limit F: limit B behind risk\'s bearer check (token, revocations in Redis)', (url) => directTarget(url, byId(session.token)), suffix),
      ...(assertionKey === undefined
        ? []
        : limitScenario(limitFVouched, 'limit F′: limit B behind risk\'s vouched check (the assertion, the token; no Redis)', (url) => vouchedTarget(url, byId(session.token), assertionKey), suffix)),
      { id: `risk-by-id${suffix}`, label: 'risk direct: by/id', target: directTarget(stack.riskUrl, byId(session.token)), servers },
      ...(assertionKey === undefined
        ? []
        : [{ id: `risk-vouched-by-id${suffix}`, label: 'risk vouched: by/id (the gateway\'s assertion)', target: vouchedTarget(stack.riskUrl, byId(session.token), assertionKey), servers }]),
    ];
    await measureClosedInTurns(ctx, scenarios(''));
    await measureClosedInTurns(ctx, scenarios('-pace'), ctx.config.equalRate);
  } finally {
    await stopAll(limits);
  }
}
