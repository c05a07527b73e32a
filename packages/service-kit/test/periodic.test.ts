import assert from 'node:assert/strict';
import { type Periodic, periodic } from '../src/periodic.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** onError of tasks that must not fail. */
const unexpected = (err: unknown): void => assert.fail(`a run failed: ${String(err)}`);

/** A task whose runs are counted and each held until released, oldest first. */
function heldTask() {
  let runs = 0;
  const held: Array<() => void> = [];
  return {
    runs: () => runs,
    /** Resolves once the n-th run has begun. */
    begun: async (n: number) => {
      while (runs < n) await sleep(1);
    },
    release: () => held.shift()?.(),
    task: async (): Promise<number> => {
      runs += 1;
      const run = runs;
      await new Promise<void>((resolve) => held.push(resolve));
      return run;
    },
  };
}

describe('periodic', () => {
  const started: Array<Periodic<unknown>> = [];
  afterEach(async () => {
    for (const each of started.splice(0)) await each.stop();
  });
  const track = <T>(each: Periodic<T>): Periodic<T> => {
    started.push(each as Periodic<unknown>);
    return each;
  };

  it('runs the task first after the given delay, then an interval after each run, on a timer that keeps no process alive', async () => {
    const at: number[] = [];
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const begun = Date.now();
    const each = track(periodic(async () => void at.push(Date.now() - begun), { intervalMs: 40, onError: unexpected }));
    each.start(5);
    assert.equal(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length, timersBefore, 'the timer is unref()ed');
    await sleep(150);
    assert.ok(at.length >= 3 && at.length <= 4, `runs at ${at.join(', ')} ms`);
    assert.ok(at[0]! < 35, `the first run at ${at[0]} ms`);
    for (let i = 1; i < at.length; i++) assert.ok(at[i]! - at[i - 1]! >= 35, `runs at ${at.join(', ')} ms`);
  });

  it('runNow runs at once and resolves with the result; before start, no timer runs it', async () => {
    let runs = 0;
    const each = track(periodic(async () => (runs += 1), { intervalMs: 10, onError: unexpected }));
    assert.equal(await each.runNow(), 1);
    await sleep(40);
    assert.equal(runs, 1);
  });

  it('while a run is under way, callers of runNow share one more run that starts after it', async () => {
    const held = heldTask();
    const each = track(periodic(held.task, { intervalMs: 60_000, onError: unexpected }));
    const first = each.runNow();
    await held.begun(1);
    const [second, third] = [each.runNow(), each.runNow()];
    await sleep(10);
    assert.equal(held.runs(), 1, 'never two at once');
    held.release();
    assert.equal(await first, 1);
    await held.begun(2);
    held.release();
    assert.deepEqual([await second, await third], [2, 2]);
    assert.equal(held.runs(), 2);
  });

  it('when the timer comes due during a run asked for by runNow, joins it rather than queueing another', async () => {
    const held = heldTask();
    const each = track(periodic(held.task, { intervalMs: 10, onError: unexpected }));
    const asked = each.runNow();
    each.start(1);
    await sleep(40);
    assert.equal(held.runs(), 1);
    held.release();
    await asked;
    await each.stop();
  });

  it('when a run fails, tells onError, resolves undefined, and runs again at the next turn', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const each = track(
      periodic(
        async () => {
          runs += 1;
          if (runs <= 2) throw new Error(`failure ${runs}`);
          return runs;
        },
        { intervalMs: 10, onError: (err) => errors.push(err) },
      ),
    );
    assert.equal(await each.runNow(), undefined);
    each.start();
    for (const deadline = Date.now() + 2000; runs < 3 && Date.now() < deadline; ) await sleep(5);
    assert.deepEqual(
      errors.map((err) => (err as Error).message),
      ['failure 1', 'failure 2'],
    );
  });

  it('when the task throws before returning a promise, that is a failed run too', async () => {
    const errors: unknown[] = [];
    const each = track(
      periodic(
        (): Promise<void> => {
          throw new Error('at once');
        },
        { intervalMs: 10, onError: (err) => errors.push(err) },
      ),
    );
    assert.equal(await each.runNow(), undefined);
    assert.equal((errors[0] as Error).message, 'at once');
  });

  it('stop waits for the run under way and the one queued, and no timed run follows; start after stop does nothing', async () => {
    const held = heldTask();
    const each = periodic(held.task, { intervalMs: 5, onError: unexpected });
    each.start(1);
    await held.begun(1);
    const queued = each.runNow();
    let stopped = false;
    const stopping = each.stop().then(() => (stopped = true));
    await sleep(20);
    assert.equal(stopped, false, 'stop waits for the run under way');
    held.release();
    await held.begun(2);
    await sleep(10);
    assert.equal(stopped, false, 'and for the queued one');
    held.release();
    await stopping;
    assert.equal(await queued, 2);
    each.start(1);
    await sleep(30);
    assert.equal(held.runs(), 2);
  });
});
