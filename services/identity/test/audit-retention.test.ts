import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ConfigError, loadConfig } from '@platform/service-kit';
import { pruneAuditEvents, startAuditPruning } from '../src/audit/audit-retention.ts';
import { identityConfigSpec } from '../src/config.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('audit retention (AUDIT_RETENTION_DAYS)', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity();
  });
  after(async () => {
    await identity.close();
  });

  /** Events about a new subject, `ageDays` old each as of `now`. */
  async function eventsAged(now: Date, ...ageDays: number[]): Promise<string> {
    const subject = randomUUID();
    await identity.db('audit_events').insert(ageDays.map((age) => ({ type: 'user.updated', subject_user_id: subject, at: new Date(now.getTime() - age * DAY) })));
    return subject;
  }
  const remaining = async (subject: string) =>
    ((await identity.db('audit_events').where({ subject_user_id: subject }).orderBy('at').select('at')) as Array<{ at: Date }>).map((r) => r.at.getTime());

  it('deletes, batch by batch, every event older than the retention and nothing younger', async () => {
    const now = new Date();
    const subject = await eventsAged(now, 1000, 800, 500, 401, 400.01, 400.001, 399.99, 200, 0);
    const kept = await eventsAged(now, 399.999, 1);
    const deleted = await pruneAuditEvents(identity.db, 400, now, 2);
    assert.equal(deleted, 6);
    assert.deepEqual(await remaining(subject), [now.getTime() - 399.99 * DAY, now.getTime() - 200 * DAY, now.getTime()].map(Math.round));
    assert.equal((await remaining(kept)).length, 2);
    assert.equal(await pruneAuditEvents(identity.db, 400, now, 2), 0, 'a second run finds nothing');
  });

  it('runs on a timer that stop() ends, waiting for a prune in progress', async () => {
    const subject = await eventsAged(new Date(), 30, 1);
    const pruning = startAuditPruning({ db: identity.db, logger: identity.log.logger, retentionDays: 7, firstMs: 10, intervalMs: 20 });
    for (const deadline = Date.now() + 3000; (await remaining(subject)).length > 1 && Date.now() < deadline; ) await sleep(10);
    assert.equal((await remaining(subject)).length, 1);
    const later = await eventsAged(new Date(), 30);
    await sleep(60);
    assert.equal((await remaining(later)).length, 0, 'the timer runs again');
    await pruning.stop();
    const afterStop = await eventsAged(new Date(), 30);
    await sleep(100);
    assert.equal((await remaining(afterStop)).length, 1, 'nothing runs after stop()');
  });

  it('a failed prune is logged and tried again at the next turn', async () => {
    const logger = identity.log.logger;
    let calls = 0;
    // A database handle whose every query fails at first: what a Postgres outage looks like to the timer.
    const failing = new Proxy(identity.db, {
      get: (target, property, receiver) => {
        if (property === 'raw' && (calls += 1) === 1) return () => Promise.reject(new Error('postgres is down'));
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    const subject = await eventsAged(new Date(), 30);
    const pruning = startAuditPruning({ db: failing, logger, retentionDays: 7, firstMs: 5, intervalMs: 20 });
    for (const deadline = Date.now() + 3000; (await remaining(subject)).length > 0 && Date.now() < deadline; ) await sleep(10);
    await pruning.stop();
    assert.equal((await remaining(subject)).length, 0);
    assert.ok(identity.log.lines().some((l) => l.msg === 'could not prune old audit events; trying again later'));
  });

  it('keeps 400 days unless configured, and refuses a retention below one day', () => {
    assert.equal(loadConfig(identityConfigSpec, {}).AUDIT_RETENTION_DAYS, 400);
    assert.equal(loadConfig(identityConfigSpec, { AUDIT_RETENTION_DAYS: '30' }).AUDIT_RETENTION_DAYS, 30);
    assert.throws(() => loadConfig(identityConfigSpec, { AUDIT_RETENTION_DAYS: '0' }), (err: unknown) => err instanceof ConfigError && /AUDIT_RETENTION_DAYS/.test(err.message));
  });
});
