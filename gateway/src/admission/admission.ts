import { randomUUID } from 'node:crypto';
import { REVOCATION_LIBRARY_LUA, type RevocationCheck, type RevocationReader, RevocationsUnavailableError } from '@platform/auth';
import { type Logger, type Redis, SLOT_LEDGER_LUA, STAMP_TTL_MS, type WriteStamp, periodic, redisTopology, turnWrites, writeStamp } from '@platform/service-kit';
import { NONCE } from '../signing/signature-policy.ts';
import { luaFile } from './lua.ts';
import { signedAheadPeers } from './signed-ahead-peers.ts';

/**
 * How long after a loss's dating a signature created ahead of the clock is asked to sign again
 * (replay-store-loss.lua): the time the gateway that admitted it has to write its nonce again. It does within
 * AHEAD_WATCH_MS (0.1 s); this is CONTRACT.md part 13's 5 s of recovery, for a gateway that stalls meanwhile (the
 * outside attack on a 2 s window: a gateway stopped for 3 s at the loss, its nonce's replay admitted by another).
 */
export const SIGNED_AHEAD_WINDOW_MS = 5000;

/**
 * A signed request's admission in Redis (README, "What one request costs in Redis"), as scripts of one slot
 * each, so that it runs on a Redis Cluster as on one Redis (CONTRACT.md part 14):
 * - the revocation check, only for a request that carries or needs a bearer token: @platform/auth's
 *   reader, one script on the token's bucket (the bucket open? one EXISTS of the token's and session's keys);
 * - the client key's admission (lua/admit.lua orders its named functions): the slot's past, the replay,
 *   the rate window, the nonce and the idempotency key, every key tagged `{ck:<keyId>}`, with the key's
 *   ledger (`born`) and this gateway's stamp in that tag, on the loss primitive (service-kit's
 *   slot-ledger.ts): a signature is judged against the loss of the shard that held its nonces.
 * On a cluster both go out at once: one round trip's wait, not two. On one Redis they are one script, one
 * command (ADMIT_CHECKED_SCRIPT). Either way with the other requests' of the same event-loop turn, in one
 * socket write (`turnWrites`). The revocation check's verdict ranks after the slot's
 * past and before everything else the script decides (`decide`); when it refuses (the bucket is being
 * re-seeded, or Redis did not answer it), the request's own nonce and idempotency key are taken back
 * (idempotency/lua/withdraw.lua) before the 503, so that the same signed request passes once the bucket is
 * whole (CONTRACT.md part 13). The rate-window unit it counted stays spent.
 */
export const ADMIT_SCRIPT = [SLOT_LEDGER_LUA, admitFunctions(), luaFile('admission/lua/admit.lua')].join('\n');

/** The named functions lua/admit.lua orders, loaded after the loss primitive (SLOT_LEDGER_LUA). */
function admitFunctions(): string {
  return [
    `local STAMP_TTL_MS = ${STAMP_TTL_MS}`,
    `local SIGNED_AHEAD_WINDOW_MS = ${SIGNED_AHEAD_WINDOW_MS}`,
    luaFile('admission/lua/replay-store-loss.lua'),
    luaFile('rate-limit/lua/rate-window.lua'),
    luaFile('idempotency/lua/nonce.lua'),
    luaFile('idempotency/lua/idempotency-key.lua'),
  ].join('\n');
}

/**
 * KEYS: a client key's ledger, this gateway's stamp in its slot; ARGV: seen, last, now, ttl. The stamp
 * behind what this gateway saw makes the slot's `born` now; the stamp is kept from expiring. 1 when the slot
 * went back in time (its ledger there: a flushed slot is a loss its shard's buckets tell themselves).
 */
const STAMP_CHECK_SCRIPT = `${SLOT_LEDGER_LUA}
local existed = redis.call('EXISTS', KEYS[1]) == 1
local behind = slot_behind(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return (behind and existed) and 1 or 0`;

/** A client key's ledger dated when it has none; answers whether this call dated it, and its `born`. */
const DATE_KEY_SCRIPT = `local dated = redis.call('HSETNX', KEYS[1], 'born', ARGV[1])
return { dated, redis.call('HGET', KEYS[1], 'born') }`;

/** A client key's ledger's `ahead` (a floor of `created` after a loss: `SignedAhead`) raised to ARGV[1], never lowered. */
const RAISE_AHEAD_SCRIPT = `local current = tonumber(redis.call('HGET', KEYS[1], 'ahead') or '0') or 0
if current < tonumber(ARGV[1]) then redis.call('HSET', KEYS[1], 'ahead', ARGV[1]) end
return 0`;

/** The first check that refused the request, or `claimed`: the outcome names lua/admit.lua returns. */
export const ADMISSION_OUTCOMES = [
  'claimed',
  'nonce-reused',
  'key-reused',
  'token-revoked',
  'rate-limited',
  'signed-before-loss',
  'revocations-restoring',
  'signed-near-loss',
] as const;
export type AdmissionOutcome = (typeof ADMISSION_OUTCOMES)[number];

/** The client key script's keys by name, in the order of its `key` table (KEYS[1..]): all of one slot. */
interface AdmissionKeys {
  rate: string;
  nonce: string;
  idempotency: string;
  born: string;
  stamp: string;
}
export const ADMISSION_KEYS = ['rate', 'nonce', 'idempotency', 'born', 'stamp'] as const satisfies ReadonlyArray<keyof AdmissionKeys>;

/** The script's arguments by name, in the order of its `arg` table (ARGV[1..]). */
interface AdmissionArgs {
  nonce_ttl_ms: number;
  key_ttl_ms: number;
  /** Written into the claimed keys, so only this request can release its idempotency key. */
  owner: string;
  /** 0: count nothing. */
  limit: number;
  /** A sub-window of the rate window (windowS × 1000 / RATE_BUCKETS). */
  width_ms: number;
  /** The signature's `created` (Unix seconds). */
  created: number;
  /** This process's clock (ms): the `born` of a mirror found missing. */
  now: number;
  stamp_seen: string;
  stamp_last: string;
}
export const ADMISSION_ARGS = [
  'nonce_ttl_ms',
  'key_ttl_ms',
  'owner',
  'limit',
  'width_ms',
  'created',
  'now',
  'stamp_seen',
  'stamp_last',
] as const satisfies ReadonlyArray<keyof AdmissionArgs>;

/**
 * On one Redis, a bearer request's revocation check and its admission are one script, one command: every key
 * is on the one server (on a Redis Cluster they are of two slots, so two scripts). KEYS: the check's three
 * (`RevocationCheck.keys`), then ADMISSION_KEYS; ARGV: ADMISSION_ARGS, then the check's `now`. Answers what
 * the check found (`is_revoked`: -1 for a closed bucket), then ADMIT_SCRIPT's answer as it is; the check runs
 * whatever the admission found, as when the two go apart.
 */
export const ADMIT_CHECKED_SCRIPT = [
  REVOCATION_LIBRARY_LUA,
  admitFunctions(),
  'local function admit(KEYS, ARGV)',
  luaFile('admission/lua/admit.lua'),
  'end',
  `local found = is_revoked(KEYS[1], KEYS[2], KEYS[3], ARGV[${ADMISSION_ARGS.length + 1}])`,
  `return { found, unpack(admit({ unpack(KEYS, 4, ${ADMISSION_KEYS.length + 3}) }, { unpack(ARGV, 1, ${ADMISSION_ARGS.length}) })) }`,
].join('\n');

/** Sub-windows of a rate-limit window: the sliding window's resolution (rate-limit/lua/rate-window.lua's BUCKETS). */
export const RATE_BUCKETS = 10;

/** What the round trip found: the first check that failed (or none), and the key's quota when it has a limit. */
export interface Admission {
  outcome: AdmissionOutcome;
  /** Requests left and ms until the next one frees (`rate-limited`: until one fits); undefined without a limit. */
  quota: { remaining: number; resetMs: number } | undefined;
  /** `signed-near-loss`: ms until a signature made now is past what the slot's loss refuses. */
  signAgainMs?: number;
}

export interface AdmissionRequest {
  keyId: string;
  nonce: string;
  idempotencyKey: string;
  method: string;
  /** The bearer token (`jti` and `sid`), when the route needs one and it verified. */
  token: { tokenId: string; sessionId: string } | undefined;
  /** The request carries or needs a bearer token: refused while the revocation mirror is not whole. */
  bearing: boolean;
  /** The signature's `created` (Unix seconds). */
  created: number;
  /** Written into the claimed keys, so only this request can release its idempotency key. */
  owner: string;
  /** The key's rate limit (CONTRACT.md part 12); undefined counts nothing (a baseline for the benchmark). */
  rate: { limit: number; windowS: number } | undefined;
}

/** Nonces, idempotency keys and quotas, scoped by client key id. */
export interface AdmissionStore {
  /** The revocation check (bearer requests) beside the client key's script, ranked by `decide`. Rejects when Redis is unreachable. */
  admit(request: AdmissionRequest): Promise<Admission>;
  /**
   * Frees an idempotency key after a 5xx or no answer, so the client may retry with it. Rejects when Redis did
   * not answer; the key is then released once it does (one warn line when the first is kept, one info line when
   * all are released).
   */
  release(request: Pick<AdmissionRequest, 'keyId' | 'idempotencyKey' | 'owner'>): Promise<void>;
  /**
   * Dates the ledger of every client key in use that has none (a key never used, or a slot that lost its
   * data: the same), as the store does by itself every second; resolves with the date it set (ms), 0 when it
   * set none. Rejects when Redis does not answer.
   */
  dateKeys(): Promise<number>;
  /** Stops dating the keys, checking the stamps and watching Redis's servers (shutdown). */
  stop(): Promise<void>;
}

export interface AdmissionOptions {
  /** How long a nonce is remembered: as long as a signature carrying it can be accepted (`nonceLifetimeS`). */
  nonceTtlS: number;
  /** Idempotency key memory for GET and HEAD (`idempotencyKeyLifetimeS`). */
  safeTtlS: number;
  /** Idempotency key memory for every other method. */
  unsafeTtlS: number;
  /**
   * The revocations, for bearer requests; closed whole when a client key's slot is found gone back. With
   * `checkOf`, on one Redis, a bearer request's check runs inside its admission script (ADMIT_CHECKED_SCRIPT).
   */
  revocations: Pick<RevocationReader, 'isRevoked' | 'closeAll'> & Partial<Pick<RevocationReader, 'checkOf'>>;
  /** The client keys in use, as they change (GATEWAY_CLIENT_KEYS_FILE): each is dated when first seen. */
  keyIds?: () => readonly string[];
  /** The most nonces signed ahead remembered per client key (`SignedAhead`); MAX_SIGNED_AHEAD unless a test says. */
  maxSignedAheadPerKey?: number;
  logger?: Pick<Logger, 'warn' | 'info' | 'debug'>;
}

/** The scripts as ioredis defines them (EVALSHA, falling back to EVAL once per connection). */
interface AdmissionCommands {
  gatewayAdmit(...keysAndArgs: string[]): Promise<AdmitReply>;
  gatewayAdmitChecked(...keysAndArgs: string[]): Promise<[number, ...AdmitReply]>;
  gatewayRelease(key: string, owner: string): Promise<number>;
  gatewayWithdraw(nonceKey: string, idempotencyKey: string, owner: string): Promise<number>;
  gatewayStampCheck(bornKey: string, stampKey: string, seen: string, last: string, now: string, ttlMs: string): Promise<number>;
  gatewayDateKey(bornKey: string, now: string): Promise<[number, string]>;
  gatewayRaiseAhead(bornKey: string, created: string): Promise<number>;
}

/** ADMIT_SCRIPT's answer: outcome, remaining, wait (ms), stamp count, went back, sign again (ms). */
type AdmitReply = [string, number, number, number, number, number?];
/** The revocation check's verdict: `restoring` while the token's bucket is not whole. */
type RevocationVerdict = 'restoring' | 'revoked' | 'unrevoked';

const SAFE_METHODS = new Set(['GET', 'HEAD']);
const OUTCOMES = new Set<string>(ADMISSION_OUTCOMES);

// Key ids may contain ':'; encoding it keeps `a` + `b:c` and `a:b` + `c` from naming the same key. Braces are
// encoded too: the hash tag must be the whole key id.
const ENCODED = /[%:{}]/;
const scope = (keyId: string): string =>
  ENCODED.test(keyId) ? keyId.replaceAll('%', '%25').replaceAll(':', '%3A').replaceAll('{', '%7B').replaceAll('}', '%7D') : keyId;

/** The common start (below REDIS_KEY_PREFIX) of a client key's keys: its hash tag, one slot (CONTRACT.md part 14). */
export const clientKeyTag = (keyId: string): string => `gateway:{ck:${scope(keyId)}}:`;
const nonceKeyIn = (tag: string, nonce: string): string => `${tag}nonce:${nonce}`;
const idempotencyKeyIn = (tag: string, key: string): string => `${tag}idem:${key}`;
/** The Redis key (below REDIS_KEY_PREFIX) remembering a nonce. */
export const nonceKey = (keyId: string, nonce: string): string => nonceKeyIn(clientKeyTag(keyId), nonce);
/** The Redis key (below REDIS_KEY_PREFIX) counting a key's requests; the window is in it, so a new window starts afresh. */
export const rateKey = (keyId: string, windowS: number): string => `${clientKeyTag(keyId)}rate:${windowS}`;
/** The Redis key (below REDIS_KEY_PREFIX) remembering an idempotency key. */
export const idempotencyRedisKey = (keyId: string, key: string): string => idempotencyKeyIn(clientKeyTag(keyId), key);
/** The client key's ledger (below REDIS_KEY_PREFIX): its `born` (ms) says since when the key's slot holds its nonces. */
export const replayBornKey = (keyId: string): string => `${clientKeyTag(keyId)}born`;
/** This gateway's write stamp (below REDIS_KEY_PREFIX) in a client key's slot. */
const stampKey = (keyId: string, gatewayId: string): string => `${clientKeyTag(keyId)}stamp:gateway:${gatewayId}`;

/** The verdict of a request without a bearer token. */
const UNREVOKED: PromiseFulfilledResult<RevocationVerdict> = { status: 'fulfilled', value: 'unrevoked' };

/** `promise` settled (never rejects). */
async function settled<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  try {
    return { status: 'fulfilled', value: await promise };
  } catch (reason) {
    return { status: 'rejected', reason };
  }
}

/** What `run` returns or throws, settled. */
function settledNow<T>(run: () => T): PromiseSettledResult<T> {
  try {
    return { status: 'fulfilled', value: run() };
  } catch (reason) {
    return { status: 'rejected', reason };
  }
}

/** A bearer request without a verified token (missing, bad, or not read on this route) is held by this bucket's state. */
const UNVERIFIED_TOKEN = { tokenId: '-', sessionId: '' };

/** Where each value that changes with every request goes in the script's call: its keys, then its arguments. */
const SLOT = {
  nonce: ADMISSION_KEYS.indexOf('nonce'),
  idempotency: ADMISSION_KEYS.indexOf('idempotency'),
  owner: ADMISSION_KEYS.length + ADMISSION_ARGS.indexOf('owner'),
  created: ADMISSION_KEYS.length + ADMISSION_ARGS.indexOf('created'),
  now: ADMISSION_KEYS.length + ADMISSION_ARGS.indexOf('now'),
  stampSeen: ADMISSION_KEYS.length + ADMISSION_ARGS.indexOf('stamp_seen'),
  stampLast: ADMISSION_KEYS.length + ADMISSION_ARGS.indexOf('stamp_last'),
} as const;

/** What every admission of one client key sends alike, encoded once (issue 44: the admission's arguments pre-encoded). */
interface ClientKeyCalls {
  /** Its keys' common start (`clientKeyTag`). */
  tag: string;
  stamp: WriteStamp;
  /** The script's call (ADMISSION_KEYS, then ADMISSION_ARGS) per rate policy and method class, its per-request slots empty. */
  templates: Map<string, string[]>;
  /** The nonces this gateway admitted signed ahead of its clock. */
  signedAhead: SignedAhead;
  /** The ledger's `born` as the key watch last read it; undefined before its first read. */
  bornSeen: string | undefined;
}

/**
 * The most nonces signed ahead one gateway remembers of one client key (some 150 bytes each), so that no key's
 * requests can push out another's. Clients whose clocks keep time sign none: their `created` is never ahead of
 * the gateway's second (a clock a little ahead signs some, in the second its clock turns first).
 */
const MAX_SIGNED_AHEAD = 5000;

const NOTHING_FORGOTTEN = { created: 0, untilMs: 0 } as const;

/**
 * One client key's nonces this gateway admitted with a `created` ahead of its clock's second (a client whose
 * clock runs ahead; CONTRACT.md part 2 allows SIGNATURE_MAX_SKEW_S), by their Redis key, each with its `created`
 * and until when Redis keeps a nonce (ms). After a loss of the key's slot such a signature is not "created
 * before the loss", so only this memory tells its replay (CONTRACT.md part 13: no request signed before the
 * loss can be replayed): this gateway refuses it at once, and writes the nonces again within AHEAD_WATCH_MS of
 * the loss's dating, for the others (`republish`). Past `max` the one created first is forgotten, and the newest
 * `created` forgotten becomes the key's floor, written into its ledger after a loss (`ahead`): the admission
 * script asks a signature created at or below it to sign again, so a flood of the key's own requests weakens
 * nothing. Forgetting the first created keeps that floor as low as it can be (the outside attack on the first
 * version: one request signed 299 s ahead, forgotten as the oldest, held every clock of its key off for five
 * minutes after a loss), and a floor the clock has passed is dropped: the ledger's `born` refuses what it did.
 * The outside attack that asked for all this: a request signed ahead and sent before a FLUSHALL was admitted
 * again after it.
 */
export class SignedAhead {
  readonly nonces = new Map<string, { created: number; untilMs: number }>();
  /** The newest `created` forgotten, and until when (ms) a signature so created could still be accepted. */
  forgotten: { created: number; untilMs: number } = NOTHING_FORGOTTEN;
  /** The nonce keys by their `created`: at most SIGNATURE_MAX_SKEW_S × 2 + 1 of them. */
  private readonly byCreated = new Map<number, Set<string>>();
  private readonly max: number;

  constructor(max = MAX_SIGNED_AHEAD) {
    this.max = max;
  }

  /** Remembers `nonceKey` when `created` is ahead of `nowMs`'s second: whether it was new to this memory. */
  remember(nonceKey: string, created: number, nowMs: number, untilMs: number): boolean {
    return created > Math.floor(nowMs / 1000) && this.keep(nonceKey, created, untilMs);
  }

  /**
   * Keeps `nonceKey` whatever this gateway's clock says: one another gateway admitted signed ahead of its own
   * clock, which this one's may run ahead of (the outside attack: a gateway 2.5 s ahead dropped what it was
   * told, judged it not ahead, and admitted its replay). Whether it was new to this memory.
   */
  keep(nonceKey: string, created: number, untilMs: number): boolean {
    if (this.nonces.has(nonceKey)) return false;
    this.nonces.set(nonceKey, { created, untilMs });
    const same = this.byCreated.get(created);
    if (same === undefined) this.byCreated.set(created, new Set([nonceKey]));
    else same.add(nonceKey);
    if (this.nonces.size > this.max) this.forgetFirstCreated();
    return true;
  }

  /** Whether this gateway admitted `nonceKey` signed ahead, and Redis would still be keeping it. */
  admitted(nonceKey: string, nowMs: number): boolean {
    return this.nonces.size > 0 && (this.nonces.get(nonceKey)?.untilMs ?? 0) > nowMs;
  }

  /**
   * Forgets what Redis no longer keeps, and a floor no signature can be accepted at any more or that the clock
   * passed two seconds ago (a signature created at or below it is then created before any later loss).
   */
  prune(nowMs: number): void {
    for (const [nonceKey, { created, untilMs }] of this.nonces) if (untilMs <= nowMs) this.forget(nonceKey, created);
    if (this.forgotten.untilMs <= nowMs || this.forgotten.created + 2 <= Math.floor(nowMs / 1000)) this.forgotten = NOTHING_FORGOTTEN;
  }

  get empty(): boolean {
    return this.nonces.size === 0 && this.forgotten.created === 0;
  }

  private forgetFirstCreated(): void {
    let first = Number.POSITIVE_INFINITY;
    for (const created of this.byCreated.keys()) if (created < first) first = created;
    const [nonceKey] = this.byCreated.get(first) ?? [];
    const entry = nonceKey === undefined ? undefined : this.nonces.get(nonceKey);
    if (nonceKey === undefined || entry === undefined) return;
    this.forget(nonceKey, first);
    this.forgotten = { created: Math.max(this.forgotten.created, first), untilMs: Math.max(this.forgotten.untilMs, entry.untilMs) };
  }

  private forget(nonceKey: string, created: number): void {
    this.nonces.delete(nonceKey);
    const same = this.byCreated.get(created);
    same?.delete(nonceKey);
    if (same?.size === 0) this.byCreated.delete(created);
  }
}

/** The script's call for `keyId` under `rate` with a key memory of `keyTtlMs`, but for its per-request values (`SLOT`). */
function callTemplate(keyId: string, calls: ClientKeyCalls, rate: AdmissionRequest['rate'], nonceTtlMs: number, keyTtlMs: number): string[] {
  const keys: AdmissionKeys = { rate: rateKey(keyId, rate?.windowS ?? 0), nonce: '', idempotency: '', born: replayBornKey(keyId), stamp: calls.stamp.key };
  const args: Record<keyof AdmissionArgs, string> = {
    nonce_ttl_ms: String(nonceTtlMs),
    key_ttl_ms: String(keyTtlMs),
    owner: '',
    limit: String(rate?.limit ?? 0),
    // Sub-windows of whole milliseconds.
    width_ms: String(rate === undefined ? 0 : (rate.windowS * 1000) / RATE_BUCKETS),
    created: '',
    now: '',
    stamp_seen: '',
    stamp_last: '',
  };
  return [...ADMISSION_KEYS.map((name) => keys[name]), ...ADMISSION_ARGS.map((name) => args[name])];
}

/** Outcomes that say the client key's slot lost its data: they rank before the revocation check's verdict. */
const SLOT_PAST: ReadonlySet<AdmissionOutcome> = new Set(['signed-before-loss', 'signed-near-loss']);

/**
 * The request's outcome from the script's and the revocation check's (run side by side), in CONTRACT.md's
 * order: the slot's past, then revocations being re-seeded, then what the script found (replay, rate,
 * nonce, idempotency key); a claimed request with a revoked token is `token-revoked` (it keeps its key: a
 * 401 is not a 5xx, part 3). `failed`: the check did not answer (the caller fails the request closed).
 */
function decide(found: AdmissionOutcome, revocation: 'restoring' | 'revoked' | 'unrevoked' | 'failed'): AdmissionOutcome {
  if (SLOT_PAST.has(found)) return found;
  if (revocation === 'restoring') return 'revocations-restoring';
  if (found === 'claimed' && revocation === 'revoked') return 'token-revoked';
  return found;
}

/** How often the store dates the ledgers of client keys that have none (a new key, a loss): CONTRACT.md parts 12 and 13 allow 5 s. */
const KEY_WATCH_MS = 1000;
/**
 * How far apart the gateways' clocks may be for a nonce one of them tells to be kept by another (beyond the
 * signature's skew): they should be in step (NTP), and this much apart is still told.
 */
const CLOCKS_APART_S = 60;
/** How often the keys this gateway remembers nonces signed ahead of are watched (`SignedAhead`). */
const AHEAD_WATCH_MS = 100;
/** How often each stamp is checked when nothing else did: it also keeps the stamps from expiring. */
const STAMP_CHECK_MS = 60_000;
/** The most idempotency keys a gateway keeps to release once Redis answers again (some 150 bytes each; the oldest go first). */
const MAX_UNRELEASED = 10_000;
/** How often the releases that failed are tried again while Redis does not answer. */
const RELEASE_RETRY_MS = 1000;

/** The admission store over the gateway's Redis client (whose keyPrefix ioredis also applies to script keys). */
export function createAdmissionStore(redis: Redis, options: AdmissionOptions): AdmissionStore {
  // A fixed key count: ioredis' auto-pipeline on a cluster picks a command's node by its first argument,
  // which must be a key (the client key's slot), not the count.
  redis.defineCommand('gatewayAdmit', { numberOfKeys: ADMISSION_KEYS.length, lua: ADMIT_SCRIPT });
  redis.defineCommand('gatewayAdmitChecked', { numberOfKeys: ADMISSION_KEYS.length + 3, lua: ADMIT_CHECKED_SCRIPT });
  redis.defineCommand('gatewayRelease', { numberOfKeys: 1, lua: luaFile('idempotency/lua/release.lua') });
  redis.defineCommand('gatewayWithdraw', { numberOfKeys: 2, lua: luaFile('idempotency/lua/withdraw.lua') });
  redis.defineCommand('gatewayStampCheck', { numberOfKeys: 2, lua: STAMP_CHECK_SCRIPT });
  redis.defineCommand('gatewayDateKey', { numberOfKeys: 1, lua: DATE_KEY_SCRIPT });
  redis.defineCommand('gatewayRaiseAhead', { numberOfKeys: 1, lua: RAISE_AHEAD_SCRIPT });
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as AdmissionCommands;
  const { revocations, logger } = options;
  const gatewayId = randomUUID();
  // The admissions of the requests that arrive together leave in one socket write, at the end of the turn.
  const holdTurnWrites = turnWrites(redis);
  // One stamp and set of call templates per client key this gateway wrote nonces of (verified key ids
  // only: a bounded set; a key's templates, one per rate policy and method class, as bounded).
  const clients = new Map<string, ClientKeyCalls>();
  const callsOf = (keyId: string): ClientKeyCalls => {
    let calls = clients.get(keyId);
    if (calls === undefined) {
      calls = { tag: clientKeyTag(keyId), stamp: writeStamp(stampKey(keyId, gatewayId)), templates: new Map(), signedAhead: new SignedAhead(options.maxSignedAheadPerKey), bornSeen: undefined };
      clients.set(keyId, calls);
    }
    return calls;
  };
  const nonceTtlMs = options.nonceTtlS * 1000;

  /** A slot found gone back may have lost revocations too (its shard went back): every bucket waits for identity's re-seed. */
  const wentBack = async (): Promise<void> => {
    logger?.warn('Redis holds fewer nonces than this gateway wrote (a replica that lagged was promoted?): marked as a data loss');
    await revocations.closeAll();
  };

  /** 'restoring' while the token's bucket is not whole (the reader's RevocationsUnavailableError); any other error is thrown. */
  const restoringOr = (err: unknown): RevocationVerdict => {
    if (err instanceof RevocationsUnavailableError) return 'restoring';
    throw err;
  };
  /** Whether the token or its session was revoked, as the reader found it. */
  const verdictOf = (request: AdmissionRequest, revoked: boolean): RevocationVerdict => (revoked && request.token !== undefined ? 'revoked' : 'unrevoked');
  async function revocationCheck(request: AdmissionRequest): Promise<RevocationVerdict> {
    try {
      return verdictOf(request, await revocations.isRevoked(request.token ?? UNVERIFIED_TOKEN));
    } catch (err) {
      return restoringOr(err);
    }
  }
  // One Redis: a bearer request's check inside its admission script. A cluster: the two apart, on their two slots.
  const { checkOf } = revocations;
  const together = checkOf !== undefined && !redis.isCluster;

  /** The admission script's answer and the revocation check's verdict (bearer requests), each settled. */
  async function admitAndCheck(request: AdmissionRequest, call: string[]): Promise<[PromiseSettledResult<RevocationVerdict>, PromiseSettledResult<AdmitReply>]> {
    if (!request.bearing) return [UNREVOKED, await settled(commands.gatewayAdmit(...call))];
    if (!together) return Promise.allSettled([revocationCheck(request), commands.gatewayAdmit(...call)]);
    let check: RevocationCheck;
    try {
      check = checkOf(request.token ?? UNVERIFIED_TOKEN);
      // Its server being identified (a connection back a moment ago): once it is known.
      if (check.onceKnown !== undefined) check = await check.onceKnown();
    } catch (err) {
      // Held by this process (its server replaced), or not known in time: restoring, and the admission alone.
      return [settledNow(() => restoringOr(err)), await settled(commands.gatewayAdmit(...call))];
    }
    const answer = await settled(commands.gatewayAdmitChecked(...check.keys, ...call, call[SLOT.now] ?? String(Date.now())));
    // Neither answered.
    if (answer.status === 'rejected') return [answer, answer];
    const [found, ...admitted] = answer.value;
    let verdict: PromiseSettledResult<RevocationVerdict>;
    try {
      const revoked = check.verdict(Number(found));
      // A promise only for an answer sent again on a connection that came back, before its server was identified.
      verdict = { status: 'fulfilled', value: verdictOf(request, typeof revoked === 'boolean' ? revoked : await revoked) };
    } catch (err) {
      verdict = settledNow(() => restoringOr(err));
    }
    return [verdict, { status: 'fulfilled', value: admitted }];
  }

  // This gateway's stamps against Redis: a slot that came back with fewer nonces than this gateway wrote (a
  // replica that lagged was promoted) is marked lost at once, not at this gateway's next request with that
  // key: another gateway may be replayed to. After every change of Redis's servers (a connection back, a
  // server replaced), and every STAMP_CHECK_MS.
  const stampChecks = periodic(
    async () => {
      const now = String(Date.now());
      const found = await Promise.all(
        [...clients.entries()].map(async ([keyId, { stamp }]) =>
          Number(await commands.gatewayStampCheck(replayBornKey(keyId), stamp.key, stamp.seen(), stamp.last(), now, String(STAMP_TTL_MS))) === 1,
        ),
      );
      if (found.includes(true)) await wentBack();
    },
    { intervalMs: STAMP_CHECK_MS, onError: (err) => logger?.debug({ err }, 'could not check the write stamps (Redis unreachable); checked again on reconnect') },
  );
  const topology = redisTopology(redis);
  const unsubscribe = topology.subscribe(() => void stampChecks.runNow());
  stampChecks.start();

  // The nonces a client key's slot forgot with a loss that this gateway admitted signed ahead of its clock
  // (`SignedAhead`), written again (SET NX: one written since is kept), and the newest `created` it could not
  // keep into the ledger (`ahead`, only raised), so that another gateway refuses their replay too; this one
  // refuses the nonces it kept by its own memory already (`admit`).
  const republish = async (keyId: string, calls: ClientKeyCalls, now: number, firstSight: boolean): Promise<void> => {
    const { nonces, forgotten, empty } = calls.signedAhead;
    if (empty) return;
    holdTurnWrites();
    const writes: Array<Promise<unknown>> = [...nonces].map(async ([nonceKey, { untilMs }]) => await redis.set(nonceKey, 'signed-ahead', 'PX', untilMs - now, 'NX'));
    if (forgotten.created > 0) writes.push(commands.gatewayRaiseAhead(replayBornKey(keyId), String(forgotten.created)));
    await Promise.all(writes);
    // The first `born` read of a key this gateway remembers nonces of (its first request signed ahead, or a
    // peer's broadcast) cannot tell a loss from what was always there: written again all the same (NX keeps
    // what Redis holds), but no loss is told.
    if (firstSight) return;
    logger?.warn(
      { keyId, nonces: nonces.size, forgottenUpTo: forgotten.created || undefined },
      'the replay store of a client key lost its data: the nonces this gateway admitted signed ahead of its clock are written again',
    );
  };

  // Every client key's ledger dated every KEY_WATCH_MS when it has none (HSETNX: a ledger there is kept):
  // - a key this gateway just learnt of (at start, or from a reload of the keys file), never by its first
  //   request: a key never used is not a loss, so the first request signed with it a second or more later
  //   is answered like any other (CONTRACT.md part 12);
  // - a key whose slot lost its data (a flush, an empty restart) within KEY_WATCH_MS of the loss, whether
  //   or not the key is in use: the loss is dated when it happened, not when the key's next request finds
  //   it, maybe minutes later, which would refuse every request signed after the loss but over a second
  //   before that one as signed before it (401), and ask the next ones to sign again (CONTRACT.md part 13).
  // A ledger born anew since the last read (a loss, found by whoever came first) has the nonces this gateway
  // admitted signed ahead written again (`republish`). One script per key and KEY_WATCH_MS, in one socket
  // write per Redis server.
  const watchKeys = async (keyIds: ReadonlySet<string>, now: number): Promise<number> => {
    if (keyIds.size === 0) return 0;
    holdTurnWrites();
    const set = await Promise.all(
      [...keyIds].map(async (keyId) => {
        const [dated, born] = await commands.gatewayDateKey(replayBornKey(keyId), String(now));
        const calls = clients.get(keyId);
        if (calls !== undefined && born !== calls.bornSeen) {
          // Taken at once, so that the other watch, running meanwhile, does not write the same nonces again.
          const before = calls.bornSeen;
          calls.bornSeen = born;
          try {
            await republish(keyId, calls, now, before === undefined);
          } catch (err) {
            calls.bornSeen = before;
            throw err;
          }
        }
        return dated === 1;
      }),
    );
    return set.includes(true) ? now : 0;
  };
  /** The keys whose nonces signed ahead this gateway remembers (their memories pruned first when `prune`). */
  const keysSignedAhead = (now: number, prune: boolean): Set<string> => {
    const keyIds = new Set<string>();
    for (const [keyId, calls] of clients) {
      if (prune) calls.signedAhead.prune(now);
      if (!calls.signedAhead.empty) keyIds.add(keyId);
    }
    return keyIds;
  };
  const dateKeys = async (): Promise<number> => {
    const now = Date.now();
    return await watchKeys(new Set([...(options.keyIds?.() ?? []), ...keysSignedAhead(now, true)]), now);
  };
  const keyWatch = periodic(dateKeys, {
    intervalMs: KEY_WATCH_MS,
    onError: (err) => logger?.debug({ err }, 'could not date the client keys\' ledgers (Redis unreachable); trying again'),
  });
  keyWatch.start(0);
  // The keys this gateway remembers nonces signed ahead of, watched every AHEAD_WATCH_MS: their nonces are written
  // again that soon after a loss's dating, which is how long another gateway could take their replay for one
  // signed after it (the outside attack: a replay sent every 20 ms won 61-91 ms after a flush, before the key
  // watch's second). Normally there are none.
  const aheadWatch = periodic(
    async () => {
      const now = Date.now();
      await watchKeys(keysSignedAhead(now, false), now);
    },
    { intervalMs: AHEAD_WATCH_MS, onError: (err) => logger?.debug({ err }, 'could not watch the keys with nonces signed ahead (Redis unreachable); trying again') },
  );
  aheadWatch.start();

  // Every gateway is told of the nonces each admits signed ahead, as it admits them, and remembers them as its
  // own: after a loss it refuses their replay by its memory (409) and writes them again, whether or not the
  // gateway that admitted them is still there to (stopped, restarted or stalled since: the outside attacks'
  // residuals of the 0.1 s watch). Redis's publish/subscribe outlives a flush of its data. A gateway whose
  // subscription was down when a nonce was told keeps the window and the admitting gateway's own rewrite.
  // What is told is held to what a gateway could have admitted (the outside attacks published by hand: a
  // `created` of year 2255 became a floor refusing every request of the key, made-up key ids got a key watch
  // each, nonces of a megabyte were kept and written again): a configured client key's nonce of the form a
  // signature's is, `created` within the signature's skew of this clock and CLOCKS_APART_S more (a gateway
  // whose clock ran 2.5 s behind dropped a nonce signed 300 s ahead, then admitted its replay), kept no longer
  // than a nonce is.
  const maxSkewS = (options.nonceTtlS - 2) / 2;
  const peers = signedAheadPeers(redis, gatewayId, logger, (keyId, nonceKey, created, ttlMs) => {
    const now = Date.now();
    const tag = nonceKeyIn(clientKeyTag(keyId), '');
    if (Math.abs(created - Math.floor(now / 1000)) > maxSkewS + CLOCKS_APART_S || ttlMs > nonceTtlMs) return;
    if (!nonceKey.startsWith(tag) || !NONCE.test(nonceKey.slice(tag.length))) return;
    if (options.keyIds !== undefined && !options.keyIds().includes(keyId)) return;
    callsOf(keyId).signedAhead.keep(nonceKey, created, now + ttlMs);
  });

  // Idempotency keys whose release failed (Redis unreachable, or its answer lost), by Redis key, with their owner:
  // released once it answers again. A key claimed by a request whose answer was lost, its release failing too,
  // stayed held otherwise, and the client's retry with it was refused as reused until the key expired (CONTRACT.md
  // part 3: a 5xx gives it back). release.lua deletes a key only for its owner, so a late release takes nothing
  // from another request.
  // One warn line when the first is kept, one info line when all are released: not a line per failed request
  // (the helpers' attack counted 73 000 in a minute of Redis down; each 503 has its own access line).
  const unreleased = new Map<string, string>();
  let releasedSinceKept = 0;
  const releaseLater = (key: string, owner: string, err: unknown): void => {
    if (unreleased.size === 0) {
      releasedSinceKept = 0;
      logger?.warn({ reason: err instanceof Error ? err.message : String(err) }, 'could not release the idempotency keys of failed requests; they are released once Redis answers');
    }
    unreleased.delete(key);
    if (unreleased.size >= MAX_UNRELEASED) unreleased.delete(unreleased.keys().next().value as string);
    unreleased.set(key, owner);
  };
  const releases = periodic(
    async () => {
      if (unreleased.size === 0) return;
      for (const [key, owner] of [...unreleased]) {
        await commands.gatewayRelease(key, owner);
        releasedSinceKept += 1;
        if (unreleased.get(key) === owner) unreleased.delete(key);
      }
      if (unreleased.size === 0) logger?.info({ released: releasedSinceKept }, 'released the idempotency keys of the requests that failed while Redis was unreachable');
    },
    { intervalMs: RELEASE_RETRY_MS, onError: (err) => logger?.debug({ err }, 'could not release the idempotency keys of failed requests yet (Redis unreachable); trying again') },
  );
  releases.start();
  // At once when the connection is back: after what ioredis sends again of the old one (a claim among them).
  const releaseNow = (): void => {
    if (unreleased.size > 0) void releases.runNow();
  };
  redis.on('ready', releaseNow);

  /** A nonce this gateway admitted signed ahead of its clock (or may have): remembered, and told to the other gateways. */
  const rememberAdmitted = (calls: ClientKeyCalls, request: AdmissionRequest, nonce: string, nowMs: number): void => {
    if (calls.signedAhead.remember(nonce, request.created, nowMs, nowMs + nonceTtlMs)) peers.tell(request.keyId, nonce, request.created, nonceTtlMs);
  };

  return {
    async admit(request) {
      const { rate } = request;
      const calls = callsOf(request.keyId);
      const { stamp } = calls;
      const safe = SAFE_METHODS.has(request.method);
      const kind = rate === undefined ? String(safe) : `${safe} ${rate.limit} ${rate.windowS}`;
      let template = calls.templates.get(kind);
      if (template === undefined) {
        template = callTemplate(request.keyId, calls, rate, nonceTtlMs, (safe ? options.safeTtlS : options.unsafeTtlS) * 1000);
        calls.templates.set(kind, template);
      }
      // The template's copy, with this request's values in their slots.
      const call = template.slice();
      const nonce = nonceKeyIn(calls.tag, request.nonce);
      const idempotency = idempotencyKeyIn(calls.tag, request.idempotencyKey);
      call[SLOT.nonce] = nonce;
      call[SLOT.idempotency] = idempotency;
      call[SLOT.owner] = request.owner;
      call[SLOT.created] = String(request.created);
      const nowMs = Date.now();
      call[SLOT.now] = String(nowMs);
      call[SLOT.stampSeen] = stamp.seen();
      call[SLOT.stampLast] = stamp.last();
      holdTurnWrites();
      // Whether this request's nonce is left written by it: unknown until the script answers (and after, when
      // what follows fails before the nonce is taken back).
      let leftWritten: boolean | undefined;
      try {
        const [revocation, admitted] = await admitAndCheck(request, call);
        if (admitted.status === 'rejected') throw admitted.reason;
        const [found, remaining, waitMs, count, slotWentBack, signAgainMs] = admitted.value;
        stamp.observe(Number(count));
        if (!OUTCOMES.has(found)) throw new Error(`unexpected admission script result ${String(found)}`);
        const claimed = found === 'claimed' || found === 'key-reused';
        leftWritten = claimed;
        const foundGoneBack = Number(slotWentBack) === 1;
        if (foundGoneBack) await wentBack();
        // The revocation check ran beside the script that found the slot gone back in time: its answer may be of
        // that past too (a revoked token found unrevoked), so a bearer request waits for the re-seed, as every
        // later one does once the buckets are closed.
        const verdict = foundGoneBack && request.bearing ? 'restoring' : revocation.status === 'fulfilled' ? revocation.value : 'failed';
        const outcome = decide(found as AdmissionOutcome, verdict);
        // Refused after the script claimed: this request's claims go back first, so its retry is not a replay.
        if (claimed && (outcome === 'revocations-restoring' || revocation.status === 'rejected')) {
          // The idempotency key too: withdraw.lua deletes only what this request owns (not another's key).
          await commands.gatewayWithdraw(nonce, idempotency, request.owner);
          leftWritten = false;
        }
        if (revocation.status === 'rejected') throw revocation.reason;
        if (outcome === 'revocations-restoring') return { outcome, quota: rate === undefined ? undefined : { remaining: 0, resetMs: 1000 } };
        const quota = rate === undefined ? undefined : { remaining: Number(remaining), resetMs: Number(waitMs) };
        if (outcome === 'signed-near-loss') return { outcome, quota, signAgainMs: Number(signAgainMs ?? 1000) };
        // Every outcome that leaves the nonce written, a refusal of the idempotency key or of the token too: after a
        // loss their replay would not be refused again.
        if (outcome === 'claimed' || outcome === 'token-revoked' || outcome === 'key-reused') {
          // Claimed in a slot that forgot this nonce (a loss since this gateway admitted it, signed ahead of the
          // clock): a replay. Its nonce stays written; the idempotency key it took, the first request's, is given back.
          if (calls.signedAhead.admitted(nonce, nowMs)) {
            await commands.gatewayRelease(idempotency, request.owner);
            return { outcome: 'nonce-reused', quota };
          }
          rememberAdmitted(calls, request, nonce, nowMs);
        }
        return { outcome, quota };
      } catch (err) {
        // The script may have written the nonce, its answer lost (timed out) or what followed failed: remembered
        // as admitted when signed ahead, so that its replay after a loss is refused as every admitted one's (the
        // outside attack: the answer timed out after 500 ms, the 503's retry ran the request, and the first
        // request's replay after a flush ran it again). Its own resend, the same bytes, is refused too (409).
        if (leftWritten !== false) rememberAdmitted(calls, request, nonce, nowMs);
        throw err;
      }
    },
    async release(request) {
      const key = idempotencyRedisKey(request.keyId, request.idempotencyKey);
      try {
        await commands.gatewayRelease(key, request.owner);
      } catch (err) {
        releaseLater(key, request.owner, err);
        throw err;
      }
    },
    dateKeys,
    async stop() {
      unsubscribe();
      redis.off('ready', releaseNow);
      peers.stop();
      topology.stop();
      await Promise.all([stampChecks.stop(), keyWatch.stop(), aheadWatch.stop(), releases.stop()]);
    },
  };
}
