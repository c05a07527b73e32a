import { type Server, createServer } from 'node:net';

async function listening(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** A TCP port free on 127.0.0.1 right now, for a process about to be started on it. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number;
}

/**
 * `count` distinct TCP ports free on 127.0.0.1 right now, for processes about to be started on them. Each
 * is held until all are chosen: asked one after another, the system may hand out a port it gave a moment
 * before, which nothing has bound yet (a local cluster's twelve ports, a stack's four).
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i += 1) servers.push(await listening());
    return servers.map((server) => (server.address() as { port: number }).port);
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}
