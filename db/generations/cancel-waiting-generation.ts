import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { failGeneration } from './fail-generation';

/**
 * pending (waiting in line) -> failed `canceled`, refunded, with its stream event and push
 * (README, "Queue position" and "Cancel"), its ticket cancelled: `failGeneration` with the
 * `waiting` guard, so a generation a dispatcher has claimed is being handed to the provider and is
 * not cancelled. A dispatcher's round that fetched the ticket meanwhile skips the generation this
 * transaction holds and puts the ticket back in place, which the cancel then ends (it waits for
 * that round's commit: milliseconds). So a cancel racing a submission ends one way only: cancelled
 * and refunded, or submitted. False when nothing changed.
 */
export async function cancelWaitingGeneration(db: Knex, boss: PgBoss, generationId: string): Promise<boolean> {
  return db.transaction((trx) => failGeneration(trx, boss, { generationId, from: 'waiting', errorCode: 'canceled' }));
}
