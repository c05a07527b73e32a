import type { components } from '../generated/openapi.ts';

/** The kinds of change the audit trail records (openapi.yaml `AuditEventType`). */
export type AuditEventType = components['schemas']['AuditEventType'];

/** An audit event as answered by GET /v1/audit/events (openapi.yaml `AuditEvent`). */
export type AuditEventResponse = components['schemas']['AuditEvent'];

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

/**
 * What one change records. `details` says what changed, never a secret: no password, token, code or
 * hash (a test reads every event the flows write and looks for them).
 */
export interface NewAuditEvent {
  type: AuditEventType;
  subjectUserId: string | null;
  details?: Record<string, unknown>;
}
