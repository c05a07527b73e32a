import { type Logger, type Redis, isCluster } from '@platform/service-kit';

/**
 * The channel on which gateways tell each other the nonces they admit signed ahead of their clocks (below
 * the environment's REDIS_KEY_PREFIX, which ioredis applies to keys only: the channel is prefixed here).
 */
export const SIGNED_AHEAD_CHANNEL = 'gateway:signed-ahead';

/** One gateway's side of the channel: what it tells, and its subscription. */
export interface SignedAheadPeers {
  /** Tells the other gateways of a nonce this one admitted signed ahead, kept `ttlMs` from now. */
  tell(keyId: string, nonceKey: string, created: number, ttlMs: number): void;
  /** Ends the subscription. */
  stop(): void;
}

/** What another gateway told: its client key, the nonce's key (below the prefix), `created`, and for how long Redis keeps it. */
export type HeardNonce = (keyId: string, nonceKey: string, created: number, ttlMs: number) => void;

/**
 * Publishes on, and subscribes to, the channel of the signed-ahead nonces (`SignedAhead` in admission.ts): one
 * message per nonce, `gateway id, key id, nonce key, created, ttl ms` on lines of their own (a key id or a
 * nonce holds no line break: both are checked before any admission). A message of this gateway's own, or one
 * that is not five such fields, is ignored. The subscription is made again on every `ready` (ioredis also
 * subscribes again by itself after a reconnect); a publish or subscribe that fails is logged at debug, and
 * costs only what the channel adds: the key watch and the window of CONTRACT.md part 13 hold without it.
 */
export function signedAheadPeers(redis: Redis, gatewayId: string, logger: Pick<Logger, 'debug'> | undefined, heard: HeardNonce): SignedAheadPeers {
  const keyPrefix = (redis.options as { keyPrefix?: string }).keyPrefix ?? '';
  const channel = `${keyPrefix}${SIGNED_AHEAD_CHANNEL}`;
  // A cluster client subscribes on a connection of its own already (ioredis's ClusterSubscriber, one node's);
  // a client of one Redis would run nothing else once subscribed, so it gets a duplicate.
  const shared = isCluster(redis);
  let subscriber: Redis | undefined;
  try {
    subscriber = shared ? redis : redis.duplicate();
  } catch (err) {
    logger?.debug({ err }, 'no connection of its own for the signed-ahead channel: the other gateways\' nonces are not heard');
  }
  let stopped = false;
  const subscribe = (): void => {
    if (stopped || subscriber === undefined) return;
    subscriber.subscribe(channel).catch((err: unknown) => logger?.debug({ err }, 'could not subscribe to the signed-ahead channel yet; again when connected'));
  };
  const onMessage = (from: string, text: string): void => {
    if (from !== channel) return;
    const fields = text.split('\n');
    if (fields.length !== 5) return;
    const [teller, keyId, nonceKey, created, ttlMs] = fields as [string, string, string, string, string];
    const createdS = Number(created);
    const ttl = Number(ttlMs);
    if (teller === gatewayId || keyId === '' || nonceKey === '' || !Number.isSafeInteger(createdS) || !Number.isSafeInteger(ttl) || ttl <= 0) return;
    heard(keyId, nonceKey, createdS, ttl);
  };
  subscriber?.on('ready', subscribe);
  subscriber?.on('message', onMessage);
  // The gateway's own client tells an outage once; a duplicate follows it.
  if (!shared) subscriber?.on('error', () => undefined);
  subscribe();
  return {
    tell(keyId, nonceKey, created, ttlMs) {
      redis.publish(channel, `${gatewayId}\n${keyId}\n${nonceKey}\n${created}\n${ttlMs}`).catch((err: unknown) => logger?.debug({ err }, 'could not tell the other gateways of a nonce signed ahead'));
    },
    stop() {
      stopped = true;
      if (!shared) {
        subscriber?.disconnect();
        return;
      }
      // The subscription stays with the client, which another store may share (tests do); its messages go unheard here.
      redis.off('ready', subscribe);
      redis.off('message', onMessage);
    },
  };
}
