import { randomBytes, randomUUID } from 'node:crypto';
import { type Principal, hasAnyRole } from '@platform/auth';
import { ConflictError, NotFoundError, UnauthorizedError } from '@platform/errors';
import { currentRequestLog } from '@platform/service-kit';
import { type Knex, retryingTransaction } from '@platform/service-kit/database';
import type { AuthServices, AuthenticationResult } from '../auth/auth-services.ts';
import { type CountedFailure, afterFailedLogin, countFailedLoginIn } from '../auth/count-failed-login.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import { newRefreshToken, refreshTokenHash } from '../sessions/refresh-token.ts';
import { recordIssuedAccessToken } from '../sessions/revoked-tokens.ts';
import type { SessionEnding } from '../sessions/session-endings.ts';
import { assertCallerSessionLives, holdCallerFirst, insertRefreshToken } from '../sessions/sessions.repository.ts';
import { findUserById } from '../user-records/users.repository.ts';
import {
  type FactorRecord,
  activateFactor,
  deleteFactors,
  deletePendingFactorsBut,
  findActiveFactor,
  insertPendingFactor,
  insertRecoveryCodes,
  listUserFactors,
  lockFactor,
  useRecoveryCode,
  useStep,
} from '../factor-records/factors.repository.ts';
import { RECOVERY_CODES, newRecoveryCode, recoveryCodeHash } from '../factor-records/recovery-codes.ts';
import type { SecretBox } from '../factor-records/secret-box.ts';
import { matchingStep, otpauthUri } from '../factor-records/totp.ts';

/** Wrong codes in one session before it ends (CONTRACT.md part 15); each also counts as a failed login. */
export const MAX_SECOND_FACTOR_FAILURES = 5;
/** The id a proof is looked up under when there is no factor: the nil UUID, never a factor's (randomUUID). */
const NO_FACTOR_ID = '00000000-0000-0000-0000-000000000000';
/** The bytes of a TOTP secret: 160 bits, RFC 4226's recommendation for HMAC-SHA-1. */
const SECRET_BYTES = 20;

/** What the second factor's use cases work with, beside authentication's; made once in app.ts. */
export interface SecondFactorServices extends AuthServices {
  /** Seals the TOTP secrets at rest (SECOND_FACTOR_ENCRYPTION_KEY). */
  box: SecretBox;
  /** The issuer an authenticator app shows beside the account (SECOND_FACTOR_ISSUER). */
  issuerLabel: string;
  /** Counts a verification's outcome, for the operators' metrics. */
  countVerification: (outcome: 'verified' | 'failed') => void;
}

/** A code, or one of the recovery codes: what proves the second factor. */
export type FactorProof = { code: string } | { recoveryCode: string };

/** The one answer to a code that does not prove the factor, whatever was wrong (CONTRACT.md part 15). */
const invalidCode = (reason: string): UnauthorizedError => new UnauthorizedError('Invalid code', { cause: new Error(reason) });

/**
 * Takes the user's row, as a login does first: every change of a user's factors holds it, so one that
 * raced another (a confirmation, an enrolment, a removal) runs after it and acts on what it left, and the
 * lock order stays user, then factors, then sessions.
 */
async function holdUser(trx: Knex.Transaction, principal: Principal): Promise<void> {
  await trx('users').where({ id: principal.userId }).forNoKeyUpdate().first('id');
}

/**
 * `holdUser`, for a change the caller's own session asks for: 401 `Bad Credentials` (as a revoked token's)
 * when that session ended while the change waited (a confirmation elsewhere, a logout).
 */
async function holdUserOfLiveSession(trx: Knex.Transaction, principal: Principal): Promise<void> {
  await holdUser(trx, principal);
  await assertCallerSessionLives(trx, principal, principal.userId);
}

/**
 * Whether `proof` proves `factor` now, spending what it used (in `db`, the caller's transaction): a TOTP
 * step (once, and no earlier one after it) or a recovery code (once). A factor that is undefined (the user
 * has none) is compared against a secret of no one, so that the answer and its time are those of a wrong code.
 */
async function proves(db: Knex, box: SecretBox, factor: FactorRecord | undefined, proof: FactorProof): Promise<boolean> {
  if ('recoveryCode' in proof) {
    // Looked up for no factor too (the nil id is never a factor's), so that it takes a wrong code's time.
    const used = await useRecoveryCode(db, factor?.id ?? NO_FACTOR_ID, recoveryCodeHash(proof.recoveryCode));
    return factor !== undefined && used;
  }
  const secret = factor === undefined ? randomBytes(SECRET_BYTES) : box.open(factor.secret, factor.id);
  const step = matchingStep(secret, proof.code, Date.now());
  if (factor === undefined || step === undefined) return false;
  return useStep(db, factor.id, step);
}

/**
 * What trying a proof came to, in the transaction that tried it: proved, or why not: the session ended, no
 * proof was given (nothing was guessed, so nothing is counted), or a failure (what was counted).
 */
type Tried = 'proved' | 'ended' | 'unproven' | { failures: number; login: CountedFailure | undefined };

/**
 * Tries `proof` against `factor` in `trx`, the transaction of the change it allows: the user's row is held
 * (holdUser), so the factor read there stays as it is, and what the proof spends (a step, a recovery code)
 * is spent only if the change commits. It runs on the session's locked row: the codes of one session are
 * tried one at a time, and none once the session has ended, so codes sent in parallel cannot try more than
 * MAX_SECOND_FACTOR_FAILURES. No proof (a removal with no body) guesses nothing: it is refused as a wrong code
 * is, uncounted, whatever the factor (the caller's active one or an unknown one alike, in the same time), so a
 * client's faulty request cannot end a session or block a user. A proof that fails is counted against the
 * session (the fifth ends it) and as a failed login of the user (part 4's permanent block), and recorded, in this
 * transaction, under the user's row: codes of other sessions queued behind it see the count, and a block
 * (which ends every session), before they are tried. `refusal` does the rest once it commits.
 */
async function tryProof(
  trx: Knex.Transaction,
  ending: SessionEnding,
  services: SecondFactorServices,
  principal: Principal,
  audit: AuditContext,
  factor: FactorRecord | undefined,
  proof: FactorProof | undefined,
): Promise<Tried> {
  const session = (await trx('sessions').where({ id: principal.sessionId }).whereNull('revoked_at').forUpdate().first('second_factor_failures as failures')) as { failures: number } | undefined;
  // Ended while this request waited (its fifth failure, a logout): its code is not tried.
  if (session === undefined || session.failures >= MAX_SECOND_FACTOR_FAILURES) return 'ended';
  if (proof === undefined) return 'unproven';
  if (await proves(trx, services.box, factor, proof)) return 'proved';
  const failures = session.failures + 1;
  await trx('sessions').where({ id: principal.sessionId }).update({ second_factor_failures: failures });
  await insertAuditEvent(trx, audit, { type: 'second_factor.failed', subjectUserId: principal.userId, details: { sessionId: principal.sessionId, failures } });
  if (failures >= MAX_SECOND_FACTOR_FAILURES) await ending.one(audit, { id: principal.sessionId, userId: principal.userId }, 'second-factor-failures');
  const user = await findUserById(trx, principal.userId);
  const login = user === undefined ? undefined : await countFailedLoginIn(trx, ending, services, user, audit, { username: user.username, reason: 'wrong-second-factor' });
  return { failures, login };
}

/** The refusal of a proof that failed, once its transaction committed the counts: the metrics, the logs, a block's mail; the one 401 to throw. */
function refusal(services: SecondFactorServices, principal: Principal, tried: Exclude<Tried, 'proved'>, why: string): UnauthorizedError {
  if (tried === 'ended') return invalidCode(`${why}: the session ended before its code was tried`);
  if (tried === 'unproven') return invalidCode(`${why}: no code given, nothing counted`);
  services.countVerification('failed');
  if (tried.failures >= MAX_SECOND_FACTOR_FAILURES) currentRequestLog(services.logger).warn({ sessionId: principal.sessionId, failures: tried.failures }, 'session ended after repeated wrong second-factor codes');
  if (tried.login !== undefined) afterFailedLogin(services, tried.login);
  return invalidCode(why);
}

/** POST /v1/auth/factors/totp: a new pending TOTP factor, its secret shown once. 409 while one is active. */
export async function enrollTotp(services: SecondFactorServices, principal: Principal): Promise<{ factorId: string; secret: string; otpauthUri: string; status: 'PENDING' }> {
  const secret = randomBytes(SECRET_BYTES);
  const id = randomUUID();
  const outcome = await retryingTransaction(services.db, async (trx) => {
    // A confirmation in flight first: then its factor is active (409) and this session perhaps ended.
    await holdUserOfLiveSession(trx, principal);
    if ((await findActiveFactor(trx, principal.userId)) !== undefined) return 'active' as const;
    await insertPendingFactor(trx, { id, userId: principal.userId, secret: services.box.seal(secret, id) });
    return 'pending' as const;
  });
  if (outcome === 'active') throw new ConflictError('Second factor already active');
  const uri = otpauthUri(secret, services.issuerLabel, principal.username);
  return { factorId: id, secret: new URL(uri).searchParams.get('secret') ?? '', otpauthUri: uri, status: 'PENDING' };
}

/**
 * POST /v1/auth/factors/totp/confirm: a current code of the pending factor activates it and gives the
 * recovery codes, shown this once. The session that proved it is at `aal` 2 from now on (a refresh gives
 * its tokens), and every access token it was given before, the one presented among them, is refused from
 * now on, as after the second factor (CONTRACT.md part 15: a user with an active factor is refused while
 * its token is `aal` 1); every other session of the user ends, so no token of the password alone works on.
 * The revocations are published once the activation commits; those Redis does not take are written again
 * from Postgres as soon as it answers, as ended sessions are (session-endings.ts).
 */
export async function confirmTotp(
  services: SecondFactorServices,
  principal: Principal,
  audit: AuditContext,
  input: { factorId: string; code: string },
): Promise<{ factorId: string; status: 'ACTIVE'; recoveryCodes: string[] }> {
  const factorId = canonicalUuid(input.factorId);
  const recoveryCodes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  const outcome = await services.sessions.transaction(async (trx, ending) => {
    // The user's row first: a login that raced this committed before (its session ends below) or waits and
    // then reads the factor active (its tokens need the second factor); a change of the factor (another
    // confirmation, a removal, a new enrolment) is over, and what it left is read here.
    await holdUserOfLiveSession(trx, principal);
    const factor = await lockFactor(trx, principal.userId, factorId);
    // The caller's factor is active already (this one, confirmed by a request that raced this one, or
    // another, which dropped this one when it was confirmed): 409, and no code is tried, so none is counted.
    if (factor?.status === 'ACTIVE' || (await findActiveFactor(trx, principal.userId)) !== undefined) return 'taken' as const;
    // An unknown factor (another user's, or one a new enrolment replaced) is tried as a factor of no one: it
    // answers, counts and takes the time of a wrong code (CONTRACT.md part 15).
    const tried = await tryProof(trx, ending, services, principal, audit, factor, { code: input.code });
    if (tried !== 'proved') return { refused: tried, why: factor === undefined ? 'unknown factor at confirmation' : 'wrong code at confirmation' };
    if (!(await activateFactor(trx, factorId))) return 'taken' as const;
    // Enrolments started beside this one (at once, from two devices) can no longer be confirmed: they go.
    await deletePendingFactorsBut(trx, principal.userId, factorId);
    await insertRecoveryCodes(trx, factorId, recoveryCodes.map(recoveryCodeHash));
    // The session's row, held since the proof: a refresh of it committed before (its token is revoked below)
    // or waits and then gives the session's tokens at aal 2.
    await trx('sessions').where({ id: principal.sessionId }).update({ aal: 2 });
    // The user's count of failures stays: a confirmation proves a factor the caller just made, not the
    // password, so it must not buy a bearer of the session (no password) more password guesses.
    await ending.revokeTokensOf(principal.sessionId);
    await insertAuditEvent(trx, audit, { type: 'factor.enrolled', subjectUserId: principal.userId, details: { factorId, type: 'TOTP' } });
    await endOtherSessions(trx, ending, audit, principal);
    return 'active' as const;
  });
  if (outcome === 'taken') throw new ConflictError('Second factor already active');
  if (typeof outcome === 'object') throw refusal(services, principal, outcome.refused, outcome.why);
  return { factorId, status: 'ACTIVE', recoveryCodes };
}

/** Ends every live session of the principal's user but its own. */
async function endOtherSessions(trx: Knex.Transaction, ending: Parameters<Parameters<SecondFactorServices['sessions']['transaction']>[0]>[1], audit: AuditContext, principal: Principal): Promise<void> {
  const others = (await trx('sessions').where({ user_id: principal.userId }).whereNull('revoked_at').whereNot({ id: principal.sessionId }).pluck('id')) as string[];
  for (const id of others) await ending.one(audit, { id, userId: principal.userId }, 'second-factor-changed');
}

/** GET /v1/auth/factors: the caller's factors, never a secret. */
export async function listFactors(services: SecondFactorServices, principal: Principal): Promise<{ items: Array<{ factorId: string; type: 'TOTP'; status: 'PENDING' | 'ACTIVE'; createdAt: string; lastUsedAt: string | null }>; nextCursor: null }> {
  const factors = await listUserFactors(services.db, principal.userId);
  return {
    items: factors.map((factor) => ({
      factorId: factor.id,
      type: factor.type,
      status: factor.status,
      createdAt: factor.createdAt.toISOString(),
      lastUsedAt: factor.lastUsedAt?.toISOString() ?? null,
    })),
    nextCursor: null,
  };
}

/**
 * DELETE /v1/auth/factors/{factorId}: with a current code or a recovery code of the user's active factor,
 * the factor goes (a pending one needs neither), and every other session of the user ends. An unknown factor
 * (another user's among them) is tried as a factor of no one: it answers, counts and takes the time of a
 * wrong code (CONTRACT.md part 15). No code at all is refused uncounted, for an active factor and an unknown
 * one alike (`tryProof`).
 */
export async function removeFactor(services: SecondFactorServices, principal: Principal, audit: AuditContext, givenFactorId: string, proof: FactorProof | undefined): Promise<void> {
  const factorId = canonicalUuid(givenFactorId);
  const outcome = await services.sessions.transaction(async (trx, ending) => {
    // A confirmation in flight first: the factor is read as it left it (active: a code is needed), and this
    // session perhaps ended by it.
    await holdUserOfLiveSession(trx, principal);
    const factor = await lockFactor(trx, principal.userId, factorId);
    if (factor?.status !== 'PENDING') {
      const tried = await tryProof(trx, ending, services, principal, audit, factor, proof);
      if (tried !== 'proved') return { refused: tried, why: factor === undefined ? 'unknown factor at removal' : 'wrong code at removal' };
    }
    // A proof holds only against a factor (proves): one that passed the check above is the caller's.
    if (factor === undefined) throw new Error('a proof was taken for no factor');
    await deleteFactors(trx, principal.userId, factorId);
    await insertAuditEvent(trx, audit, { type: 'factor.removed', subjectUserId: principal.userId, details: { factorId, type: factor.type, by: 'owner' } });
    if (factor.status === 'ACTIVE') await endOtherSessions(trx, ending, audit, principal);
    return 'removed' as const;
  });
  if (typeof outcome === 'object') throw refusal(services, principal, outcome.refused, outcome.why);
}

/** DELETE /v1/users/{userId}/factors (ADMIN): every factor of the user goes, and every session of it ends. */
export async function resetUserFactors(services: SecondFactorServices, principal: Principal, audit: AuditContext, givenUserId: string): Promise<void> {
  const userId = canonicalUuid(givenUserId);
  if ((await findUserById(services.db, userId)) === undefined) throw new NotFoundError('User not found');
  await services.sessions.transaction(async (trx, ending) => {
    // The user's row first, as every change of a user's factors: a confirmation in flight commits, then goes.
    await holdCallerFirst(trx, principal, userId);
    await trx('users').where({ id: userId }).forNoKeyUpdate().first('id');
    // Made only if the ADMIN's session outlived a change of the ADMIN in flight (CONTRACT.md part 4, at once).
    await assertCallerSessionLives(trx, principal, userId);
    const ids = await deleteFactors(trx, userId);
    await insertAuditEvent(trx, audit, { type: 'factor.removed', subjectUserId: userId, details: { factorIds: ids, by: 'admin' } });
    await ending.allOf(audit, userId, 'second-factor-changed');
  });
}

/**
 * POST /v1/auth/second-factor: a code (or a recovery code) of the user's active factor lifts the session to
 * `aal` 2: a new token pair of the same session, the session's refresh tokens before it retired, and every
 * access token the session was given before, the `aal` 1 one presented among them, refused from now on
 * (published once the change commits, as `confirmTotp` does). A user without a factor gets the answer of a
 * wrong code, in the same time.
 */
export async function verifySecondFactor(services: SecondFactorServices, principal: Principal, audit: AuditContext, proof: FactorProof): Promise<AuthenticationResult> {
  const refreshToken = newRefreshToken();
  type Lift = { refused: Exclude<Tried, 'proved'>; why: string } | { lifted: { username: string; accessToken: string } } | undefined;
  const outcome = await services.sessions.transaction(async (trx, ending): Promise<Lift> => {
    // The user's row before the session's, the order of every change of a user's factors; the session's
    // own state is read with the proof (an ended one tries no code).
    await holdUser(trx, principal);
    const factor = await findActiveFactor(trx, principal.userId);
    const tried = await tryProof(trx, ending, services, principal, audit, factor, proof);
    if (tried !== 'proved') return { refused: tried, why: factor === undefined ? 'no active factor' : 'wrong code' };
    const session = (await trx('sessions').where({ id: principal.sessionId }).first('created_at as createdAt')) as { createdAt: Date };
    const user = await findUserById(trx, principal.userId);
    if (user === undefined) return undefined;
    await trx('sessions').where({ id: principal.sessionId }).update({ aal: 2, second_factor_failures: 0, last_used_at: trx.fn.now() });
    // The login is complete: the user's count of failures starts again (CONTRACT.md part 4).
    await trx('users').where({ id: principal.userId }).update({ failed_login_count: 0 });
    await trx('refresh_tokens').where({ session_id: principal.sessionId }).whereNull('revoked_at').whereNull('used_at').update({ revoked_at: trx.fn.now() });
    await insertRefreshToken(trx, { sessionId: principal.sessionId, tokenHash: refreshTokenHash(refreshToken), expiresAt: new Date(Date.now() + services.refreshTokenTtlS * 1000) });
    await insertAuditEvent(trx, audit, { type: 'second_factor.verified', subjectUserId: principal.userId, details: { sessionId: principal.sessionId, with: 'code' in proof ? 'code' : 'recovery-code' } });
    // The session's tokens so far, then its first one at aal 2 (recorded after, so not among them).
    await ending.revokeTokensOf(principal.sessionId);
    const access = services.accessTokens.issue({
      userId: user.id,
      username: user.username,
      roles: user.roles,
      sessionId: principal.sessionId,
      sessionCreatedAt: session.createdAt,
      aal: 2,
      secondFactorRequired: true,
      // Bound as the session's first token was (the gateway refused it under any other key).
      clientKeyId: principal.clientKeyId,
    });
    await recordIssuedAccessToken(trx, { tokenId: access.jti, sessionId: principal.sessionId, expiresAt: access.expiresAt });
    return { lifted: { username: user.username, accessToken: access.token } };
  });
  if (outcome === undefined) throw new UnauthorizedError('Bad Credentials', { cause: new Error('the user is gone') });
  if (!('lifted' in outcome)) throw refusal(services, principal, outcome.refused, outcome.why);
  services.countVerification('verified');
  return { username: outcome.lifted.username, type: 'Bearer', accessToken: outcome.lifted.accessToken, refreshToken };
}

/** Whether a principal may act on users' factors as an ADMIN (DELETE /v1/users/{userId}/factors). */
export const mayResetFactors = (principal: Principal): boolean => hasAnyRole(principal, ['ADMIN']);
