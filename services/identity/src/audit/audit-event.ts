import type { components } from '@platform/client/openapi/identity';

/** The kinds of change the audit trail records (openapi.yaml `AuditEventType`). */
export type AuditEventType = components['schemas']['AuditEventType'];

/** An audit event as answered by GET /v1/audit/events (openapi.yaml `AuditEvent`). */
export type AuditEventResponse = components['schemas']['AuditEvent'];

/**
 * What one change records. `details` says what changed, never a secret: no password, token, code or
 * hash (a test reads every event the flows write and looks for them).
 */
export interface NewAuditEvent {
  type: AuditEventType;
  subjectUserId: string | null;
  details?: Record<string, unknown>;
}
