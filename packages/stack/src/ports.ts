import { type Server, createServer } from 'node:net';

async function listening(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** How many of the ports handed out last are never handed out again (their processes may not have bound them yet). */
const RECENT = 256;
/** The ports handed out last, oldest first. */
const recent: number[] = [];

/** A TCP port free on 127.0.0.1 right now, for a process about to be started on it (see `freePorts`). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number;
}

/**
 * `count` distinct TCP ports free on 127.0.0.1 right now, for processes about to be started on them. The
 * system may hand out again a port it gave a moment before, which nothing has bound yet (a CI run gave a
 * local stack's gateway and risk one port, one `freePort` after another): so each port is held until all
 * are chosen, and none of the last RECENT handed out by this process is chosen again (one the system
 * offers anyway is held too, so that it offers another).
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  const chosen: number[] = [];
  try {
    while (chosen.length < count) {
      const server = await listening();
      servers.push(server);
      const { port } = server.address() as { port: number };
      if (!recent.includes(port)) chosen.push(port);
    }
    recent.push(...chosen);
    recent.splice(0, Math.max(0, recent.length - RECENT));
    return chosen;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}
