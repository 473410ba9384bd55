import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { failGeneration } from './fail-generation';
import { lockTicketUnlessTaken } from './submit-ticket';

/**
 * pending (waiting in line) -> failed `canceled`, refunded, with its stream event and push
 * (README, "Queue position" and "Cancel"). In one transaction: the generation's ticket is locked first, so no dispatcher
 * can fetch it meanwhile (and the locks are taken in the dispatcher's order), then `failGeneration`
 * with the `waiting` guard: a generation a dispatcher has claimed is being handed to the provider
 * and is not cancelled. So a cancel racing a submission ends one way only: cancelled and refunded,
 * or submitted. False when nothing changed.
 */
export async function cancelWaitingGeneration(db: Knex, boss: PgBoss, generationId: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const row: { submit_job_id: string | null } | undefined = await trx('generations').where({ id: generationId }).first('submit_job_id');
    if (!row || !(await lockTicketUnlessTaken(trx, row.submit_job_id))) return false;
    return failGeneration(trx, boss, { generationId, from: 'waiting', errorCode: 'canceled' });
  });
}
