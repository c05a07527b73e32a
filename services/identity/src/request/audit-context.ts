import type { Principal } from '@platform/auth';
import type { Request } from 'express';
import { callerOf } from './caller-throttle.ts';

/** The audit context of a request: its caller (client key and source address), its id and its principal. */
export function auditContextOf(req: Request, principal?: Principal): AuditContext {
  const caller = callerOf(req);
  return {
    actorUserId: principal?.userId ?? null,
    clientKeyId: caller.clientKeyId ?? null,
    sourceAddress: caller.address,
    requestId: req.id ?? null,
  };
}

/** Who made a change and from where: the request's part of every event it causes. */
export interface AuditContext {
  /** The verified caller's user id; null when the request was anonymous (login, password reset). */
  actorUserId: string | null;
  /** The client key the gateway verified; null when identity was called directly. */
  clientKeyId: string | null;
  sourceAddress: string | null;
  requestId: string | null;
}

/** The context of changes no request made (the bootstrap ADMIN at start). */
export const SYSTEM_AUDIT_CONTEXT: AuditContext = { actorUserId: null, clientKeyId: null, sourceAddress: null, requestId: null };

/** The same request's context, with the actor it turned out to be. */
export function withActor(context: AuditContext, actorUserId: string): AuditContext {
  return { ...context, actorUserId };
}
