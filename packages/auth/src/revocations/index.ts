/**
 * Revocations: what must stay refused, kept in Redis for every verifier and surviving Redis losing its data
 * (CONTRACT.md parts 4, 13 and 14). Identity records every ended session in Postgres; Redis holds the same
 * (the *blacklist*), which the gateway, identity and risk read on every bearer request.
 *
 * One object per process, made and stopped by its composition root: a verifier's `RevocationReader`, and
 * identity's `RevocationWriter` (a reader that also writes and keeps the buckets whole). Each watches the
 * Redis servers itself (service-kit's redis-topology.ts); nothing is kept per client elsewhere.
 *
 * The blacklist is kept in 64 *buckets* (buckets.ts: one hash tag each, so a check is one script on one
 * slot). Each bucket has a ledger (service-kit's slot-ledger.ts: the loss primitive, its words at its top),
 * and is *open* while its revocations are whole. Why a bearer request answers 503 rather than 401: its
 * bucket is *closed*, because
 * - the bucket was lost: its ledger missing (a flush, an empty restart), or identity's stamp behind (a
 *   replica that lagged was promoted); or
 * - a process saw the bucket's server *replaced* (a failover or a restart, not a mere reconnect) and
 *   closed it, since writes may be gone that nobody has noticed yet;
 * and identity has not *re-seeded* it from Postgres yet (writer.ts: about a second); or this process saw
 * its server replaced and its close has not landed, or asked while its connection to it was lost.
 */
export { REVOCATION_LIBRARY_LUA } from './buckets.ts';
export { type RevocationCheck, type RevocationReader, RevocationsUnavailableError, createRevocationReader } from './reader.ts';
export { type RevocationWriter, createRevocationWriter } from './writer.ts';
