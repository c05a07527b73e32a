import bcrypt from 'bcryptjs';
import { type RunContext, measureClosed, measureFixed, needStack, signedTarget } from '../harness/context.ts';
import type { RequestShape } from '../harness/signer.ts';

/** The light, steady rate of the client that reads accounts beside the logins. */
const ACCOUNTS_RATE = 100;

/**
 * The time of one bcrypt compare at `cost` with the library the identity service uses, median of
 * five, on this otherwise idle process: the unit of the login targets.
 */
export function bcryptCompareMs(cost: number): number {
  const hash = bcrypt.hashSync('benchmark-password', cost);
  const times: number[] = [];
  for (let i = 0; i < 5; i += 1) {
    const start = process.hrtime.bigint();
    bcrypt.compareSync('benchmark-password', hash);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return times.sort((a, b) => a - b)[2] ?? Number.NaN;
}

/**
 * Logins through the gateway at the configured bcrypt cost: one at a time (unloaded latency), then
 * `BENCH_LOGINS` at once while another client reads an account at a steady rate, beside a baseline of
 * that reader alone.
 */
export async function loginScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  ctx.facts.bcryptCost = ctx.config.bcryptCost;
  ctx.facts.bcryptCompareMs = bcryptCompareMs(ctx.config.bcryptCost);
  const login: RequestShape = {
    method: 'POST',
    target: '/v1/auth/login',
    body: JSON.stringify({ username: ctx.config.adminUsername, password: ctx.config.adminPassword }),
  };
  const account: RequestShape = { method: 'GET', target: `/v1/accounts/${session.userId}`, bearer: session.token };
  await measureClosed(ctx, 'login-unloaded', 'login (gateway), one at a time', await signedTarget(ctx, stack.gatewayUrl, login), { connections: 1 });
  await measureFixed(ctx, 'accounts-unloaded', 'accounts read (gateway), alone', await signedTarget(ctx, stack.gatewayUrl, account), ACCOUNTS_RATE);
  await Promise.all([
    measureClosed(ctx, 'login-concurrent', `login (gateway), ${ctx.config.logins} at once`, await signedTarget(ctx, stack.gatewayUrl, login), {
      connections: ctx.config.logins,
      servers: { identity: stack.identityPid },
    }),
    measureFixed(ctx, 'accounts-during-logins', 'accounts read (gateway), during logins', await signedTarget(ctx, stack.gatewayUrl, account), ACCOUNTS_RATE),
  ]);
}
