// @platform/stack: the one way to start the platform's processes, for `pnpm start` (scripts/start-local.ts),
// `pnpm soak`, `pnpm bench` and the tests that need real processes. A workspace package of its own so
// that scripts, bench and tests can all import it while no deployable does: it is never in an image.
export { ALLOCATOR_ENV, type EnvValue, type DockerInstruction, imageAllocatorEnv, imageEnv, imageNodeArgs, imageNodeOptions, parseDockerfile, readDockerfile, stageEnv } from './dockerfile.ts';
export { freePort, freePorts } from './ports.ts';
export { type PrivateRedis, startPrivateRedis } from './redis-server.ts';
export { type ClusterNode, type LocalRedisCluster, startLocalRedisCluster } from './redis-cluster.ts';
export { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.ts';
export { type Output, type ProcessOptions, REPO_ROOT, type StartedProcess, startProcess, untilOk } from './process.ts';
export {
  DEPLOYABLES,
  DEPLOYABLE_PACKAGES,
  type Deployable,
  type ExtraProcess,
  LOCAL_POSTGRES_URL,
  LOCAL_REDIS_URL,
  type Sources,
  type Stack,
  type StackOptions,
  type StackRedis,
  type DeployableOptions,
  startDeployable,
  databaseUrl,
  entryOf,
  startStack,
} from './stack.ts';
