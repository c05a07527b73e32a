import type { NewAuditEvent } from '../audit/audit-event.ts';
import type { UserRecord } from '../user-records/user.ts';

/** `user.created`: who the new user is allowed to be. */
export function userCreated(user: UserRecord, extra: Record<string, unknown> = {}): NewAuditEvent {
  return { type: 'user.created', subjectUserId: user.id, details: { username: user.username, roles: user.roles, status: user.status, ...extra } };
}

const PROFILE = ['username', 'firstName', 'midName', 'lastName', 'locale', 'timezone', 'status'] as const;

/** True when both hold the same roles, in any order. */
export function sameRoles(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((role) => b.includes(role));
}

/** The API names of the fields whose stored value differs; `password` when one was set (its hash is never compared). */
export function changedUserFields(before: UserRecord, after: UserRecord, passwordSet: boolean): string[] {
  const fields: string[] = PROFILE.filter((field) => before[field] !== after[field]);
  if (!sameRoles(before.roles, after.roles)) fields.push('roles');
  if (passwordSet) fields.push('password');
  return fields;
}

/**
 * A status change under the names an operator looks for (`?type=user.blocked`, `?type=user.unblocked`),
 * as the block after failed logins and the unblock operation record it: an ADMIN's update can block a user
 * or lift a block as well. `by: 'update'` tells these from the other two. Leaving BLOCKED for INACTIVE
 * lifts nothing: the user still cannot log in.
 */
function blockEvents(before: UserRecord, after: UserRecord): NewAuditEvent[] {
  const subjectUserId = after.id;
  if (after.status === 'BLOCKED') return [{ type: 'user.blocked', subjectUserId, details: { by: 'update', previousStatus: before.status } }];
  if (before.status === 'BLOCKED' && after.status === 'ACTIVE') {
    return [{ type: 'user.unblocked', subjectUserId, details: { by: 'update', previousStatus: before.status, previousFailedLoginCount: before.failedLoginCount } }];
  }
  return [];
}

/**
 * The events of one user update: `user.updated` naming the changed fields (CONTRACT.md part 11), and for
 * the changes that move who can log in or what they may do, an event of their own with before and after.
 * A status change keeps its `user.status_changed` (every status move under one type, INACTIVE included)
 * and adds `user.blocked` or `user.unblocked` when it is one.
 */
export function userUpdateEvents(before: UserRecord, after: UserRecord, passwordSet: boolean): NewAuditEvent[] {
  const fields = changedUserFields(before, after, passwordSet);
  if (fields.length === 0) return [];
  const subjectUserId = after.id;
  const events: NewAuditEvent[] = [{ type: 'user.updated', subjectUserId, details: { fields } }];
  if (fields.includes('username')) {
    events.push({ type: 'user.username_changed', subjectUserId, details: { previousUsername: before.username, newUsername: after.username } });
  }
  if (passwordSet) events.push({ type: 'user.password_changed', subjectUserId, details: {} });
  if (fields.includes('roles')) events.push({ type: 'user.roles_changed', subjectUserId, details: { previousRoles: before.roles, newRoles: after.roles } });
  if (fields.includes('status')) {
    events.push({ type: 'user.status_changed', subjectUserId, details: { previousStatus: before.status, newStatus: after.status } }, ...blockEvents(before, after));
  }
  return events;
}
