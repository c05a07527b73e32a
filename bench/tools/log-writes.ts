// What one write of log lines to a file costs the process, in CPU (user + system, all its threads, from
// process.cpuUsage) per line: pino's default asynchronous write (fs.write: the thread pool, its wake-ups
// and the completion callback) against the same bytes written synchronously (fs.writeSync, one write(2)),
// for 1, 3 and 10 request lines per write. Why service-kit's logger writes a turn's lines synchronously
// (packages/service-kit/src/logger.ts; bench/README.md, issue 27).
// Usage: pnpm bench:log-writes [file] (default: a temporary file, removed at the end; a FIFO with a reader works too)
// BENCH_LOG_LINES: lines per measurement, a multiple of 30 (20,000 by default).
import { closeSync, openSync, rmSync, write, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A request line as the gateway logs it (service-kit's request envelope), ~330 bytes. */
const LINE = `${JSON.stringify({
  level: 'info',
  time: '2026-11-27T08:00:00.000Z',
  service: 'gateway',
  req: { id: '0b9f3c2e-6a8d-4f1e-9c7b-2d5e8a1f4c3b', method: 'GET', url: '/v1/weather-stations/by/id/17130', remoteAddress: '127.0.0.1' },
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  res: { statusCode: 200 },
  responseTime: 1,
  msg: 'GET 200',
})}\n`;
/** Lines per measurement (BENCH_LOG_LINES, a multiple of 30; 20,000 by default). */
const LINES = Number(process.env.BENCH_LOG_LINES ?? 20_000);

function cpuUsPerLine(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / LINES;
}

async function asynchronous(fd: number, perWrite: number): Promise<number> {
  const text = LINE.repeat(perWrite);
  const started = process.cpuUsage();
  for (let done = 0; done < LINES; done += perWrite) {
    await new Promise<void>((resolve, reject) => write(fd, text, (err) => (err ? reject(err) : resolve())));
  }
  return cpuUsPerLine(started);
}

function synchronous(fd: number, perWrite: number): number {
  const text = LINE.repeat(perWrite);
  const started = process.cpuUsage();
  for (let done = 0; done < LINES; done += perWrite) writeSync(fd, text);
  return cpuUsPerLine(started);
}

if (import.meta.main) {
  const given = process.argv[2];
  const file = given ?? join(tmpdir(), `log-writes-${process.pid}.log`);
  if (!Number.isInteger(LINES) || LINES <= 0 || LINES % 30 !== 0) {
    process.stderr.write('BENCH_LOG_LINES must be a positive multiple of 30\n');
    process.exit(2);
  }
  const fd = openSync(file, 'a');
  try {
    process.stdout.write(`CPU µs per ${LINE.length}-byte line, ${LINES} lines each, 3 rounds\n`);
    for (let round = 1; round <= 3; round += 1) {
      for (const perWrite of [1, 3, 10]) {
        const async = await asynchronous(fd, perWrite);
        const sync = synchronous(fd, perWrite);
        process.stdout.write(`round ${round}, ${String(perWrite).padStart(2)} lines a write: fs.write ${async.toFixed(1).padStart(5)}, fs.writeSync ${sync.toFixed(1).padStart(5)}\n`);
      }
    }
  } finally {
    closeSync(fd);
    if (given === undefined) rmSync(file, { force: true });
  }
}
