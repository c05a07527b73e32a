// Group `risk`: risk's by/id called directly (it reads the token's revocations) and as the gateway calls
// it (its assertion vouches for the token, CONTRACT.md part 10), by turns with limit B, the bare answer,
// and limit H, risk's own work for this operation with nothing around it, called directly and vouched as
// risk is; closed loop, then at one pace.
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
    ...(prefix === undefined || stack.assertionKey === undefined ? [] : ([['lean-risk', stackOptions(ctx, stack, prefix)]] as const)),
  ]);
  const [limitB, limitH] = limits;
  const { assertionKey } = stack;
  try {
    const riskDirect = directTarget(stack.riskUrl, byId(session.token));
    if (limitH !== undefined && assertionKey !== undefined) {
      await answersAsRisk(riskDirect, [directTarget(limitH.url, byId(session.token)), vouchedTarget(limitH.url, byId(session.token), assertionKey)]);
    }
    /** A limit's scenario, when it was started: its CPU figure under its own name. */
    const limitScenario = (limit: Limit | undefined, label: string, target: (url: string) => LoadTarget, suffix: string) =>
      limit === undefined ? [] : [{ id: `${limit.cpuName}${suffix}`, label, target: target(limit.url), servers: { [limit.cpuName]: limit.pid } }];
    const scenarios = (suffix: string) => [
      ...limitScenario(limitB, 'limit B: bare Express 5', (url) => directTarget(url, byId(undefined)), suffix),
      ...limitScenario(limitH, 'limit H: risk\'s work leanly, direct (the token, revocations in Redis)', (url) => directTarget(url, byId(session.token)), suffix),
      ...(assertionKey === undefined
        ? []
        : limitScenario(limitH, 'limit H vouched: risk\'s work leanly, vouched (the assertion, the token; no Redis)', (url) => vouchedTarget(url, byId(session.token), assertionKey), `-vouched${suffix}`)),
      { id: `risk-by-id${suffix}`, label: 'risk direct: by/id', target: riskDirect, servers },
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

/**
 * Limit H stands for risk only while it gives risk's answer: each of `targets` must answer 200 with the
 * body risk answers `risk` with, and the same Cache-Control, with an ETag and a Last-Modified; else the
 * group stops before it measures.
 */
async function answersAsRisk(risk: LoadTarget, targets: readonly LoadTarget[]): Promise<void> {
  const once = async ({ origin, shape, headers }: LoadTarget) => {
    const answer = await fetch(new URL(shape.target, origin), { method: shape.method, headers: headers() });
    return { status: answer.status, headers: answer.headers, body: await answer.text() };
  };
  const expected = await once(risk);
  if (expected.status !== 200) throw new Error(`risk answered ${expected.status} to ${risk.shape.target}: ${expected.body}`);
  for (const target of targets) {
    const got = await once(target);
    const same = got.status === 200 && got.body === expected.body && got.headers.get('cache-control') === expected.headers.get('cache-control');
    if (!same || got.headers.get('etag') === null || got.headers.get('last-modified') === null) {
      throw new Error(`limit H does not answer as risk: ${got.status} ${got.body} (Cache-Control ${got.headers.get('cache-control')}, ETag ${got.headers.get('etag')}); risk: ${expected.body} (Cache-Control ${expected.headers.get('cache-control')})`);
    }
  }
}
