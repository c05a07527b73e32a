import type { Cluster, Redis } from 'ioredis';

/** The environment's Redis as every revocation function takes it: one server or a Redis Cluster (CONTRACT.md part 14). */
export type RedisClient = Redis | Cluster;
