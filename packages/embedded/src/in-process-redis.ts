import type { Redis, RedisOptions } from '@platform/service-kit';
import type * as IORedis from 'ioredis';
import RedisMock from 'ioredis-mock';

// Every client of this process names the same pretend server, so ioredis-mock gives them one key space:
// a logout at identity is seen by the gateway, as with a real shared Redis.
const SHARED_SERVER = { host: 'in-process', port: 6379, db: 0 };

type RedisStatus = IORedis.Redis['status'];
type CommandDefinition = Parameters<Redis['defineCommand']>[1];

/**
 * ioredis-mock with the two things the deployables rely on and it lacks: `status` (readiness and
 * `closeRedis` read it) and scripts whose key count comes with each call (the gateway's claim script).
 */
class InProcessRedis extends RedisMock {
  override status: RedisStatus = 'ready';

  constructor(keyPrefix: string) {
    super({ ...SHARED_SERVER, keyPrefix });
    // ioredis-mock puts its commands on each instance, so they are replaced here, not on the prototype.
    const quit = this.quit.bind(this);
    const defineCommand = this.defineCommand.bind(this);
    const commands = this as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    this.quit = (async () => {
      this.status = 'end';
      return quit();
    }) as Redis['quit'];
    this.disconnect = () => {
      this.status = 'end';
    };
    this.defineCommand = (name: string, definition: CommandDefinition) => {
      if (definition.numberOfKeys !== undefined) {
        defineCommand(name, definition);
        return;
      }
      // ioredis takes the key count as the first argument when the definition gives none; ioredis-mock
      // would read every argument as a key, so each count gets a fixed-count definition of its own.
      commands[name] = (numberOfKeys: unknown, ...args: unknown[]) => {
        const count = Number(numberOfKeys);
        const fixed = `${name}$${count}`;
        if (commands[fixed] === undefined) defineCommand(fixed, { ...definition, numberOfKeys: count });
        const command = commands[fixed];
        if (command === undefined) throw new Error(`ioredis-mock did not define ${fixed}`);
        return command(...args);
      };
    };
  }
}

/** A client of the one in-process store of this process, for `createRedis` (service-kit's process host). */
export function inProcessRedis(options: Pick<RedisOptions, 'keyPrefix'>): Redis {
  return new InProcessRedis(options.keyPrefix);
}
