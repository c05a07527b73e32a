import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { freePort, freePorts } from '../src/ports.ts';

/** The first port of the system's ephemeral range, as Linux states it. */
const EPHEMERAL_START = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

/** What `freePorts(count)` gives in another process of the same module, while this one asks too (with `env`: its TMPDIR, a claims tree of its own). */
function portsOfAnotherProcess(count: number, env: NodeJS.ProcessEnv = process.env): Promise<number[]> {
  const script = `import { freePorts } from ${JSON.stringify(new URL('../src/ports.ts', import.meta.url).pathname)}; process.stdout.write(JSON.stringify(await freePorts(${count})));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '--disable-warning=ExperimentalWarning', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`the other process exited ${code}`))));
  });
}

describe('freePort and freePorts (@platform/stack)', () => {
  it('hands out ports below the system ephemeral range, which a listen(0) or an outgoing connection never gets', async () => {
    const ports = await freePorts(50);
    for (const port of ports) assert.ok(port >= 10_000 && port < EPHEMERAL_START, `port ${port} (ephemeral range from ${EPHEMERAL_START})`);
    // What the system gives on its own is in the range this module stays out of.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    assert.ok(port >= EPHEMERAL_START, `listen(0) got ${port}`);
  });

  it('never hands out a port again (one after another, as a stack asks for its processes ports)', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 300; i += 1) ports.push(await freePort());
    assert.equal(new Set(ports).size, ports.length);
  });

  it('gives two processes asking at once distinct ports: both look from the bottom of the range, and their claims decide (as the parallel test workers)', async function () {
    this.timeout(30_000);
    const [one, other] = await Promise.all([portsOfAnotherProcess(100), portsOfAnotherProcess(100)]);
    assert.equal(one.length, 100);
    assert.equal(other.length, 100);
    assert.deepEqual(one.filter((port) => other.includes(port)), []);
  });

  it('never hands out a port fetch refuses (the Fetch standard\'s bad ports: 10080 in the range), where a process would never look ready', async function () {
    this.timeout(30_000);
    // A process with a claims tree of its own starts at the bottom of the range and passes 10080.
    const tmp = mkdtempSync(join(tmpdir(), 'ports-test-'));
    try {
      const ports = await portsOfAnotherProcess(120, { ...process.env, TMPDIR: tmp });
      assert.ok(Math.max(...ports) > 10_080, `the ports went up to ${Math.max(...ports)} only`);
      assert.ok(!ports.includes(10_080), '10080 was handed out');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    await assert.rejects(fetch('http://127.0.0.1:10080/'), (err: Error) => /bad port/i.test(String((err as { cause?: unknown }).cause ?? err.message)), 'fetch refuses 10080');
  });

  it('gives distinct ports, each free: a server can listen on every one', async () => {
    const ports = await freePorts(12);
    assert.equal(new Set(ports).size, 12);
    const servers = await Promise.all(
      ports.map(
        (port) =>
          new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
            const server = createServer();
            server.once('error', reject);
            server.listen(port, '127.0.0.1', () => resolve(server));
          }),
      ),
    );
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });
});
