import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { freePort, freePorts } from '../src/ports.ts';

describe('freePort and freePorts (@platform/stack)', () => {
  it('never hands out again one of the last 256 ports it handed out, though the system offers ports again (it did: two processes of one stack got one port)', async () => {
    // One after another, as a stack asks for its processes' ports: the system offers a port it gave a
    // moment before again about once in a thousand times within eight calls (measured here).
    const ports: number[] = [];
    for (let i = 0; i < 5000; i += 1) ports.push(await freePort());
    for (let i = 1; i < ports.length; i += 1) {
      const window = ports.slice(Math.max(0, i - 256), i);
      assert.ok(!window.includes(ports[i] as number), `port ${ports[i]} handed out again ${i - window.lastIndexOf(ports[i] as number) - Math.max(0, i - 256)} calls later`);
    }
  });

  it('gives distinct ports, each free: a server can listen on every one', async () => {
    const ports = await freePorts(12);
    assert.equal(new Set(ports).size, 12);
    const servers = await Promise.all(ports.map((port) => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve(server));
    })));
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });
});
