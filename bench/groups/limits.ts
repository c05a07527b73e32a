// Group `limits`: limits A and B alone (bench/limits/bare-node.ts, bare-express.ts), each in its own
// process, measured closed loop, stopped. And the run's reference: limit B for a few seconds before any
// group, whose CPU per answer against the committed quiet reference says whether the machine was slow.
import { readFile } from 'node:fs/promises';
import { type RunContext, directTarget, measureClosed } from '../harness/context.ts';
import { ROOT } from '../harness/config.ts';
import { startLimit } from '../harness/limit-servers.ts';
import { BY_ID, byId } from './requests.ts';

export async function limitScenarios(ctx: RunContext): Promise<void> {
  for (const [name, label] of [
    ['bare-node', 'limit A: bare node:http'],
    ['bare-express', 'limit B: bare Express 5'],
  ] as const) {
    const server = await startLimit(ctx, name, {}, BY_ID);
    try {
      await measureClosed(ctx, server.cpuName, label, directTarget(server.url, byId(undefined)), { servers: { [server.cpuName]: server.pid } });
    } finally {
      await server.stop();
    }
  }
}

/** The committed quiet reference (bench/quiet-reference.json): limit B's CPU per answer on a quiet machine of this kind. */
export interface QuietReference {
  limitBUs: number;
  measuredOn: string;
}

export async function quietReference(): Promise<QuietReference> {
  return JSON.parse(await readFile(`${ROOT}bench/quiet-reference.json`, 'utf8')) as QuietReference;
}

/**
 * Limit B closed loop, one short round before the groups: its CPU per answer goes into the facts beside
 * the quiet reference, and a run where it is over twice the reference is marked slow (no verdicts).
 */
export async function referenceScenario(ctx: RunContext): Promise<void> {
  const server = await startLimit(ctx, 'bare-express', {}, BY_ID);
  try {
    const result = await measureClosed(ctx, 'reference-limit-b', 'reference: limit B, bare Express 5', directTarget(server.url, byId(undefined)), { servers: { 'limit-b': server.pid } });
    const us = result.cpuUsPerRequest?.['limit-b'];
    const reference = await quietReference();
    ctx.facts.limitBQuietReferenceUs = reference.limitBUs;
    if (us !== undefined) {
      ctx.facts.limitBReferenceUs = us;
      ctx.facts.machineSlow = us > 2 * reference.limitBUs;
      ctx.progress(`limit B: ${us.toFixed(1)} µs per answer, quiet reference ${reference.limitBUs} µs${us > 2 * reference.limitBUs ? ': machine slow, no verdicts' : ''}`);
    }
  } finally {
    await server.stop();
  }
}
