// Starts a private Redis, prints its port and exits without stopping it: what a test file that fails before
// its `stop`, or mocha's --exit, does. exit-kill.test.ts checks that the server died with this process.
import { startPrivateRedis } from '../../src/redis-server.ts';

const redis = await startPrivateRedis();
process.stdout.write(`${redis.port}\n`);
process.exit(0);
