import type { Principal, RevocationWriter } from '@platform/auth';
import { type Knex, deadlineTransaction } from '@platform/service-kit/database';
import type { NewAuditEvent } from '../audit/audit-event.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';

/** How long a record is kept past its token's `exp`: beyond the verifiers' clock tolerance, with room. */
const KEPT_PAST_EXPIRY_S = 3600;

/** The `exp` before which a token record has nothing left to do. */
const keptSince = (): Date => new Date(Date.now() - KEPT_PAST_EXPIRY_S * 1000);

/** How many records of expired tokens one new record deletes at most: more than it adds, so they never pile up. */
const PRUNED_AT_ONCE = 8;

/**
 * Deletes a few records of `table` (`revoked_tokens`, `access_tokens`) that no verifier needs any more, as a
 * new one is written, skipping rows another writer is deleting: concurrent writers never wait on one another.
 */
async function pruneExpired(trx: Knex.Transaction, table: 'revoked_tokens' | 'access_tokens'): Promise<void> {
  const expired = trx(table).where('expires_at', '<', keptSince()).limit(PRUNED_AT_ONCE).forUpdate().skipLocked().select('token_id');
  await trx(table).whereIn('token_id', expired).delete();
}

/** What revoking one access token alone works with. */
export interface TokenRevocationServices {
  db: Knex;
  revocations: Pick<RevocationWriter, 'revoke' | 'missed'>;
}

/**
 * Revokes one access token alone, its session living on (CONTRACT.md part 16's revocation of an access
 * token; part 15's `aal` 1 token replaced by the second factor): recorded in Postgres first, with its audit
 * event when one is given, so that a Redis that lost its data is re-seeded with it (part 13), then written
 * to the blacklist. When Redis does not take it, the writer writes it again from the record as soon as
 * Redis answers, and this rejects (a 503: the caller may retry; the record and its audit event are kept
 * once, so the retry only writes the blacklist again).
 */
export async function revokeAccessToken(
  services: TokenRevocationServices,
  principal: Pick<Principal, 'tokenId' | 'sessionId' | 'expiresAt'>,
  audit?: { context: AuditContext; event: NewAuditEvent },
): Promise<void> {
  await deadlineTransaction(services.db, async (trx) => {
    const recorded = await trx('revoked_tokens')
      .insert({ token_id: principal.tokenId, session_id: principal.sessionId, expires_at: new Date(principal.expiresAt * 1000) })
      .onConflict('token_id')
      .ignore()
      .returning('token_id');
    // Recorded with the revocation it is about, once: a token revoked before (a retry) changes nothing.
    if (audit !== undefined && recorded.length > 0) await insertAuditEvent(trx, audit.context, audit.event);
    await pruneExpired(trx, 'revoked_tokens');
  });
  try {
    await services.revocations.revoke(principal, principal.expiresAt);
  } catch (err) {
    services.revocations.missed([principal.sessionId]);
    throw err;
  }
}

/** The access tokens revoked alone that a verifier could still accept: what a re-seed writes back. */
export async function liveRevokedTokens(db: Knex): Promise<Array<{ tokenId: string; sessionId: string; expiresAt: number }>> {
  const rows = (await db('revoked_tokens')
    .where('expires_at', '>', keptSince())
    .select('token_id as tokenId', 'session_id as sessionId', 'expires_at as expiresAt')) as Array<{ tokenId: string; sessionId: string; expiresAt: Date }>;
  return rows.map((row) => ({ ...row, expiresAt: Math.floor(row.expiresAt.getTime() / 1000) }));
}

/** An access token as the revocations know it: its jti, its session and its `exp` (epoch seconds). */
export interface AccessTokenRecord {
  tokenId: string;
  sessionId: string;
  expiresAt: number;
}

/**
 * Records an access token just issued to a session, in the transaction that issues it, so that the session's
 * tokens can be revoked later without ending it (`revokeIssuedAccessTokens`). Records no verifier could
 * accept any more go as new ones come.
 */
export async function recordIssuedAccessToken(trx: Knex.Transaction, token: AccessTokenRecord): Promise<void> {
  await trx('access_tokens').insert({ token_id: token.tokenId, session_id: token.sessionId, expires_at: new Date(token.expiresAt * 1000) });
  await pruneExpired(trx, 'access_tokens');
}

/**
 * Records as revoked every access token issued to the session that a verifier could still accept, its
 * session living on, in the caller's transaction; returns them, for the blacklist once it commits. The
 * caller holds the session's row: a refresh of it either committed before (its token is among these) or
 * waits and reads what the caller changed.
 */
export async function revokeIssuedAccessTokens(trx: Knex.Transaction, sessionId: string): Promise<AccessTokenRecord[]> {
  const rows = (await trx('access_tokens')
    .where({ session_id: sessionId })
    .where('expires_at', '>', keptSince())
    .select('token_id as tokenId', 'session_id as sessionId', 'expires_at as expiresAt')) as Array<{ tokenId: string; sessionId: string; expiresAt: Date }>;
  if (rows.length === 0) return [];
  await trx('revoked_tokens')
    .insert(rows.map((row) => ({ token_id: row.tokenId, session_id: row.sessionId, expires_at: row.expiresAt })))
    .onConflict('token_id')
    .ignore();
  return rows.map((row) => ({ ...row, expiresAt: Math.floor(row.expiresAt.getTime() / 1000) }));
}
