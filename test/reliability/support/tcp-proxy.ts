import { type Server, type Socket, connect, createServer } from 'node:net';

/**
 * A TCP proxy in front of a server the tests must not harm (the shared Postgres): `freeze` holds every
 * byte in both directions while keeping the connections open (a hung server, as under SIGSTOP),
 * `holdAnswers` only what the server sends (it runs what it is asked; the answers wait), `kill` drops every
 * connection and refuses new ones (a dead server: what was held is lost with them), `restore` undoes each.
 */
export interface TcpProxy {
  port: number;
  freeze(): void;
  holdAnswers(): void;
  kill(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** One direction of one connection: bytes are held back while frozen and flushed on restore. */
interface Lane {
  to: Socket;
  held: Buffer[];
}

interface Pair {
  client: Socket;
  upstream: Socket;
  lanes: Lane[];
}

/** Starts a proxy on 127.0.0.1 (a free port) forwarding to `target`. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let frozen = false;
  let answersHeld = false;

  const forward = (from: Socket, lane: Lane, answers: boolean) => {
    from.on('data', (chunk: Buffer) => {
      if (frozen || (answers && answersHeld)) lane.held.push(chunk);
      else lane.to.write(chunk);
    });
  };

  const onConnection = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    const pair: Pair = { client, upstream, lanes: [{ to: upstream, held: [] }, { to: client, held: [] }] };
    pairs.add(pair);
    forward(client, pair.lanes[0]!, false);
    forward(upstream, pair.lanes[1]!, true);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) socket.on('error', drop).on('close', drop);
  };

  let server: Server = createServer(onConnection);
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen();
  port = (server.address() as { port: number }).port;

  const dropAll = () => {
    for (const { client, upstream } of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };

  return {
    port,
    freeze() {
      frozen = true;
    },
    holdAnswers() {
      answersHeld = true;
    },
    async kill() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      dropAll();
      await closed;
    },
    async restore() {
      frozen = false;
      answersHeld = false;
      for (const { lanes } of pairs) {
        for (const lane of lanes) {
          for (const chunk of lane.held.splice(0)) lane.to.write(chunk);
        }
      }
      if (!server.listening) {
        server = createServer(onConnection);
        await listen();
      }
    },
    async close() {
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
