import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { captureLogger } from '../src/testing/index.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/log-turns.ts', import.meta.url));

/** Runs the fixture: its exit code, its JSON lines (stdout) and how many writes it made (stderr). */
async function logTurns(turns: number, lines: number, exit: 'return' | 'exit'): Promise<{ code: number | null; lines: Array<{ turn: number; line: number }>; writes: number }> {
  const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', FIXTURE, String(turns), String(lines), exit], { stdio: ['ignore', 'pipe', 'pipe'] });
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
  return { code, lines: parsed, writes: Number(writes[1]) };
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

  it('writes the lines of one event-loop turn together, every line in order, one write per turn', async () => {
    const run = await logTurns(3, 40, 'return');
    assert.equal(run.code, 0);
    assertEveryLineInOrder(run.lines, 3, 40);
    assert.equal(run.writes, 3);
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
