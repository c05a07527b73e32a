import { type Logger, periodic } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import { deleteAuditEventsBefore } from './audit.repository.ts';

/** Rows per DELETE: short statements, so pruning a backlog never holds locks or the statement timeout long. */
const BATCH_SIZE = 1000;
/** How often a running identity process prunes. Every replica does; they skip each other's rows. */
const PRUNE_INTERVAL_MS = 60 * 60_000;
/** The first prune after start, once the process is serving. */
const FIRST_PRUNE_MS = 60_000;

/** Deletes every audit event older than `retentionDays` before `now`, batch by batch; returns how many. */
export async function pruneAuditEvents(db: Knex, retentionDays: number, now = new Date(), batchSize = BATCH_SIZE): Promise<number> {
  const before = new Date(now.getTime() - retentionDays * 86_400_000);
  let total = 0;
  for (;;) {
    const deleted = await deleteAuditEventsBefore(db, before, batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}

/** A running prune schedule. */
export interface AuditPruning {
  /** Stops the schedule and waits for a prune in progress to finish (before the pool is closed). */
  stop(): Promise<void>;
}

/**
 * Prunes on a timer (AUDIT_RETENTION_DAYS): first after `firstMs`, then every `intervalMs`. The timer never
 * keeps the process alive, and a failed prune is logged and tried again at the next turn.
 */
export function startAuditPruning(options: {
  db: Knex;
  logger: Logger;
  retentionDays: number;
  firstMs?: number;
  intervalMs?: number;
}): AuditPruning {
  const prune = async (): Promise<void> => {
    const deleted = await pruneAuditEvents(options.db, options.retentionDays);
    if (deleted > 0) options.logger.info({ deleted, retentionDays: options.retentionDays }, 'pruned old audit events');
  };
  const prunes = periodic(prune, {
    intervalMs: options.intervalMs ?? PRUNE_INTERVAL_MS,
    onError: (err) => options.logger.warn({ err }, 'could not prune old audit events; trying again later'),
  });
  prunes.start(options.firstMs ?? FIRST_PRUNE_MS);
  return { stop: () => prunes.stop() };
}
