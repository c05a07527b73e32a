import type { Principal } from '@platform/auth';
import type { Request } from 'express';
import { callerOf } from '../auth/caller-throttle.ts';
import type { AuditContext } from './audit-event.ts';

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
