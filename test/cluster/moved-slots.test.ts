import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Command } from 'ioredis';
import { type Redis, closeRedis, createLogger, createRedis, waitForRedis } from '@platform/service-kit';
import { type LocalRedisCluster, startLocalRedisCluster } from '@platform/stack';

/** One key's write, as the platform's admission and revocation scripts are: a script of one slot. */
const BUMP_LUA = "return redis.call('INCR', KEYS[1])";
const PREFIX = 'moved:';

type Bumping = Redis & { bump(key: string): Promise<number> };

/** `promises` settled, or a failure naming `what` once `ms` have passed: a command that never settles is a finding, not a test timeout. */
async function settledWithin<T>(promises: Promise<T>[], ms: number, what: string): Promise<PromiseSettledResult<T>[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: a command neither answered nor failed within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([Promise.allSettled(promises), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A slot moved while the commands of its master's other slots go on (a resharding), against the client
 * `createRedis` makes, with ioredis patched (patches/README.md, "MOVED"): a command refused with MOVED or ASK
 * is sent on, on its own, to the slot's new master, and the slot map follows at once. Unpatched, an
 * auto-pipeline that held such a command and a write that succeeded answered the command the refusal itself,
 * and kept routing the slot to its old master until the periodic slot refresh (5 s): every command of the
 * moved slot failed that long (ioredis issue 2075); and a MOVED followed by one command wrote the new master
 * into the array every slot of its range shares, so an auto-pipeline of two of them was refused whole ('All
 * keys in the pipeline should belong to the same slots allocation group').
 */
describe('a slot moved under traffic (ioredis patched: redirected commands sent on)', function () {
  this.timeout(60_000);
  let cluster: LocalRedisCluster;
  const logger = createLogger({ service: 'moved-slots', level: 'silent' });

  before(async () => {
    cluster = await startLocalRedisCluster();
  });
  after(async () => {
    await cluster?.stop();
  });

  const slotOf = async (key: string) => Number(await cluster.cli(cluster.nodes[0]!.port, 'CLUSTER', 'KEYSLOT', `${PREFIX}${key}`));

  /** `count` keys of distinct slots that one master serves, the first's slot to be moved, and another master. */
  async function keysOfOneMaster(count: number, tag: string): Promise<{ keys: string[]; moving: number; to: number }> {
    const first = `${tag}-0`;
    const moving = await slotOf(first);
    const from = await cluster.masterOfSlot(moving);
    const keys = [first];
    const slots = new Set([moving]);
    for (let i = 1; keys.length < count; i += 1) {
      const key = `${tag}-${i}`;
      const slot = await slotOf(key);
      if (!slots.has(slot) && (await cluster.masterOfSlot(slot)) === from) {
        keys.push(key);
        slots.add(slot);
      }
    }
    const to = (await cluster.masters()).map((m) => m.port).find((port) => port !== from)!;
    return { keys, moving, to };
  }

  async function client(autoPipelining: boolean): Promise<Bumping> {
    const redis = createRedis({ clusterNodes: cluster.seeds.split(','), keyPrefix: PREFIX, logger, autoPipelining });
    assert.ok(await waitForRedis(redis, 10_000), 'the cluster client was not ready within 10 s');
    redis.defineCommand('bump', { numberOfKeys: 1, lua: BUMP_LUA });
    return redis as Bumping;
  }

  /**
   * Every key bumped together, round after round, while `slot` moves to `to` and for 1.5 s after: the
   * failures, and how many rounds ran. Each round's bumps are sent in one event-loop turn (one auto-pipeline
   * per master when the client pipelines).
   */
  async function bumpWhileMoving(redis: Bumping, keys: readonly string[], slot: number, to: number) {
    const failures: string[] = [];
    let rounds = 0;
    let moved = false;
    let moveFailed = false;
    const moving = cluster.moveSlot(slot, to).then(
      () => {
        moved = true;
      },
      (err: unknown) => {
        moveFailed = true;
        throw err;
      },
    );
    let until = Number.POSITIVE_INFINITY;
    // A move that fails ends the rounds: its error is the test's.
    while (Date.now() < until && !moveFailed) {
      const outcomes = await settledWithin(keys.map((key) => redis.bump(key)), 10_000, `round ${rounds + 1} (moved: ${moved})`);
      rounds += 1;
      for (const outcome of outcomes) if (outcome.status === 'rejected') failures.push(String((outcome.reason as Error).message));
      if (moved && until === Number.POSITIVE_INFINITY) until = Date.now() + 1500;
      await nextTurn();
    }
    await moving;
    return { failures, rounds };
  }

  for (const autoPipelining of [true, false]) {
    it(`${autoPipelining ? 'auto-pipelined (identity, risk)' : 'one command at a time (the gateway)'}: no command fails, and each runs once`, async () => {
      const { keys, moving, to } = await keysOfOneMaster(4, `pipelined-${autoPipelining}`);
      const redis = await client(autoPipelining);
      try {
        const { failures, rounds } = await bumpWhileMoving(redis, keys, moving, to);
        assert.equal(await cluster.masterOfSlot(moving), to);
        assert.deepEqual(failures, []);
        // Neither lost nor run twice: a MOVED or ASK answer means the server did not run the command.
        assert.deepEqual(await Promise.all(keys.map((key) => redis.get(key))), keys.map(() => String(rounds)));
      } finally {
        await closeRedis(redis);
      }
    });
  }

  it('a MOVED followed moves its own slot only: the other slots of its range stay with their master until the slot map is read again', async () => {
    const { keys, moving, to } = await keysOfOneMaster(3, 'range');
    const redis = await client(true);
    try {
      // The slot map is not read again meanwhile (as while CLUSTER SLOTS is slow to answer): only what the
      // MOVED answer said routes the commands.
      (redis as unknown as { refreshSlotsCache(callback?: () => void): void }).refreshSlotsCache = (callback) => callback?.();
      await Promise.all(keys.map((key) => redis.bump(key)));
      await cluster.moveSlot(moving, to);
      // One command on its own, not auto-pipelined (as the gateway sends its scripts): it meets MOVED and follows it.
      assert.equal(await redis.sendCommand(new Command('incr', [keys[0]!], { keyPrefix: PREFIX, replyEncoding: 'utf8' })), 2);
      // Then all three in one turn: the moved slot's to its new master, the others to theirs, none refused.
      assert.deepEqual(await Promise.all(keys.map((key) => redis.bump(key))), [3, 2, 2]);
    } finally {
      await closeRedis(redis);
    }
  });

  it('a command sent on after MOVED that fails at the new master gets that failure; the other commands of its pipeline their answers', async () => {
    const { keys, moving, to } = await keysOfOneMaster(2, 'failing');
    const [movingKey, stayingKey] = keys as [string, string];
    const redis = await client(true);
    try {
      await redis.set(movingKey, 'a string');
      await cluster.moveSlot(moving, to);
      // One auto-pipeline to the old master: the write succeeds there, the HGET meets MOVED, is sent on, and
      // the new master refuses it for its own reason.
      const [written, read] = await Promise.allSettled([redis.incr(stayingKey), redis.hget(movingKey, 'field')]);
      assert.deepEqual(written, { status: 'fulfilled', value: 1 });
      assert.equal(read.status, 'rejected');
      assert.match(String((read as PromiseRejectedResult).reason), /^ReplyError: WRONGTYPE/);
      // And the slot map follows: the next command of the moved slot goes to its new master at once.
      assert.equal(await redis.get(movingKey), 'a string');
    } finally {
      await closeRedis(redis);
    }
  });
});
