import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { LOG_HOLD_BYTES, LOG_HOLD_MS, timeFieldAt } from '../src/index.ts';
import { captureLogger } from '../src/testing/index.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/log-turns.ts', import.meta.url));

/**
 * Runs the fixture: its exit code, its JSON lines (stdout), how many writes it made (stderr), how many it had
 * made when each turn's lines were logged and when (ms, performance.now) each turn's first line was.
 */
async function logTurns(
  turns: number,
  lines: number,
  exit: 'return' | 'exit',
  gap: '20ms' | 'immediate' = '20ms',
): Promise<{ code: number | null; lines: Array<{ turn: number; line: number }>; writes: number; largest: number; during: number[]; at: number[] }> {
  const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', FIXTURE, String(turns), String(lines), exit, gap], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close': the process has exited and its output is read to the end.
  const [code] = (await once(child, 'close')) as [number | null];
  const writes = /^writes (\d+)$/m.exec(stderr);
  assert.ok(writes, stderr);
  const parsed = stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { turn: number; line: number });
  const turnLines = [...stderr.matchAll(/^during (\d+) ([\d.]+)$/gm)];
  const during = turnLines.map((m) => Number(m[1]));
  const at = turnLines.map((m) => Number(m[2]));
  return { code, lines: parsed, writes: Number(writes[1]), largest: Number(/^largest (\d+)$/m.exec(stderr)?.[1]), during, at };
}

/** Asserts that `logged` holds every line of `turns` turns of `lines` lines, each once, in the order logged. */
function assertEveryLineInOrder(logged: ReadonlyArray<{ turn: number; line: number }>, turns: number, lines: number): void {
  assert.deepEqual(
    logged.map(({ turn, line }) => ({ turn, line })),
    Array.from({ length: turns * lines }, (_, i) => ({ turn: Math.floor(i / lines), line: i % lines })),
  );
}

describe('the log on stdout', function () {
  this.timeout(30_000);

  it('writes the lines logged within LOG_HOLD_MS together, every line in order: turns further apart, one write each', async () => {
    // 30 lines of at most 110 bytes: within LOG_HOLD_BYTES.
    const run = await logTurns(3, 30, 'return');
    assert.equal(run.code, 0);
    assertEveryLineInOrder(run.lines, 3, 30);
    assert.equal(run.writes, 3);
    assert.deepEqual(run.during, [0, 1, 2], 'a turn\'s lines were written in that same turn');
  });

  it('writes the lines of turns that follow each other at once together (a request alone in its turn does not pay a write)', async () => {
    // 20 lines of at most 110 bytes: within LOG_HOLD_BYTES, so only the hold (or the exit) makes a write.
    const run = await logTurns(20, 1, 'return', 'immediate');
    assert.equal(run.code, 0);
    assertEveryLineInOrder(run.lines, 20, 1);
    assert.equal(run.at.length, 20);
    // Each write between turns went out no sooner than LOG_HOLD_MS after the first line it held: how many
    // writes that is depends on how fast this machine turns (one when twenty turns take under LOG_HOLD_MS).
    // A timer may fire up to a millisecond early (libuv's clock is in whole milliseconds).
    let firstHeld = 0;
    for (let turn = 1; turn < 20; turn += 1) {
      const made = (run.during[turn] as number) - (run.during[turn - 1] as number);
      if (made === 0) continue;
      assert.equal(made, 1, `${made} writes between turns ${turn - 1} and ${turn}`);
      const held = (run.at[turn] as number) - (run.at[firstHeld] as number);
      assert.ok(held >= LOG_HOLD_MS - 1, `turns ${firstHeld}-${turn - 1} written after ${held.toFixed(2)} ms`);
      firstHeld = turn;
    }
    assert.ok(run.writes - (run.during[19] as number) <= 1, 'the rest went out in one write at exit');
  });

  it('never writes more than LOG_HOLD_BYTES at once (a pipe shared by several processes takes such a write whole): a burst goes out in writes that fill it', async () => {
    // The fixture's lines are 100 to 110 bytes long: 1,000 of them fill 25 to 27 writes.
    const run = await logTurns(1, 1000, 'return');
    assert.equal(run.code, 0);
    assertEveryLineInOrder(run.lines, 1, 1000);
    assert.ok(run.largest <= LOG_HOLD_BYTES && run.largest > LOG_HOLD_BYTES - 110, `largest write ${run.largest} bytes`);
    assert.ok(run.writes >= 25 && run.writes <= 27, `${run.writes} writes`);
    assert.ok((run.during[0] ?? 0) >= 24, 'the burst was held past the cap');
  });

  it('loses no line logged right before process.exit (the crash handler exits in the same turn)', async () => {
    const run = await logTurns(2, 25, 'exit');
    assert.equal(run.code, 3);
    assertEveryLineInOrder(run.lines, 2, 25);
  });

  it('stamps each line with the ISO time of its own millisecond', async () => {
    const { logger, lines } = captureLogger('time-test');
    const before = Date.now();
    logger.info('first');
    logger.info('second');
    await new Promise((resolve) => setTimeout(resolve, 15));
    const middle = Date.now();
    logger.info('third');
    const after = Date.now();
    const times = lines().map((line) => Date.parse(String(line.time)));
    assert.equal(times.length, 3);
    for (const [i, line] of lines().entries()) assert.match(String(line.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `line ${i}`);
    assert.ok((times[0] as number) >= before && (times[1] as number) >= (times[0] as number) && (times[1] as number) <= middle);
    assert.ok((times[2] as number) >= middle && (times[2] as number) <= after, 'the third line carries a time of before the pause');
  });
});

describe('the time of a line', () => {
  it('is pino\'s isoTime to the millisecond, across seconds, years and the epoch, asked in any order', () => {
    const base = Date.UTC(2026, 11, 1, 18, 27, 52);
    const instants = [
      base, base + 1, base + 9, base + 10, base + 99, base + 100, base + 999, base + 1000, base + 999, base + 1001, base,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), 0, -1, -999, -1000, -1001, 253402300799999, 253402300800000, 1,
    ];
    for (const now of instants) assert.equal(timeFieldAt(now), `,"time":"${new Date(now).toISOString()}"`, `at ${now}`);
    // Every millisecond of two seconds, and a random walk.
    for (let now = base - 1000; now < base + 1000; now += 1) assert.equal(timeFieldAt(now), `,"time":"${new Date(now).toISOString()}"`);
    for (let i = 0; i < 2000; i += 1) {
      const now = base + Math.floor((Math.random() - 0.5) * 1e10);
      assert.equal(timeFieldAt(now), `,"time":"${new Date(now).toISOString()}"`);
    }
  });
});
