/** A background task on a timer, one run at a time (`periodic`). */
export interface Periodic<T> {
  /**
   * Starts the timer: the first timed run `delayMs` from now (default: one interval), each next one an
   * interval after the previous timed run ended, so runs never pile up behind a slow one. Does nothing
   * once started or stopped.
   */
  start(delayMs?: number): void;
  /**
   * Runs the task now and resolves with its result, or with undefined when it failed (the error went to
   * `onError`); never rejects. While a run is under way, one more is queued and every caller asking
   * meanwhile shares it: what is awaited always started after it was asked for, so it sees whatever the
   * caller changed before asking. Works before `start` and after `stop` too.
   */
  runNow(): Promise<T | undefined>;
  /** Stops the timer for good; resolves once the run under way, and one queued, are over. */
  stop(): Promise<void>;
}

export interface PeriodicOptions {
  /** From the end of one timed run to the start of the next. */
  intervalMs: number;
  /** Told of every run that rejected; the timer goes on. Must not throw. */
  onError: (err: unknown) => void;
}

/**
 * A task that runs on a timer and on demand, never twice at once. The timer never keeps the process
 * alive. When the timer's turn comes while a run asked for by `runNow` is under way, the turn joins that
 * run instead of queueing another: only callers need a run that starts after they asked.
 */
export function periodic<T>(task: () => Promise<T>, options: PeriodicOptions): Periodic<T> {
  let running: Promise<T | undefined> | undefined;
  let queued: Promise<T | undefined> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let state: 'new' | 'started' | 'stopped' = 'new';

  const runOnce = (): Promise<T | undefined> =>
    // Through an async function, so that a task that throws at once rejects like one that fails later.
    (async () => task())().then(
      (result) => result,
      (err: unknown) => {
        options.onError(err);
        return undefined;
      },
    );

  const runNow = (): Promise<T | undefined> => {
    if (running === undefined) {
      // Cleared in `finally`, which always runs after this assignment, even for a task that settles at once.
      running = runOnce().finally(() => {
        running = undefined;
      });
      return running;
    }
    queued ??= running.then(() => {
      queued = undefined;
      return runNow();
    });
    return queued;
  };

  const schedule = (delayMs: number): void => {
    timer = setTimeout(() => {
      void (running ?? runNow()).finally(() => {
        if (state === 'started') schedule(options.intervalMs);
      });
    }, delayMs);
    timer.unref();
  };

  return {
    start(delayMs = options.intervalMs) {
      if (state !== 'new') return;
      state = 'started';
      schedule(delayMs);
    },
    runNow,
    async stop() {
      state = 'stopped';
      clearTimeout(timer);
      while (running !== undefined || queued !== undefined) await (queued ?? running);
    },
  };
}
