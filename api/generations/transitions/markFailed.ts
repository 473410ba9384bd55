import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { releaseSlot } from '../../../pool/releaseSlot';
import { credit } from '../../credits/ledger';
import type { GenerationRow } from '../model';
import { finishSubmitJob } from '../submit-job';
import { announceTerminalStatus } from './announce';

/**
 * pending | processing -> failed, with the refund in the same transaction: a `refund` ledger row
 * whose reference is the generation id, like its `reserve`. The guarded status makes a duplicate or
 * late call a no-op, and the ledger's unique (user, kind, reference) would refuse a second refund
 * anyway. Also gives back the slot and ends the FIFO ticket of a generation that never started.
 */
export async function markFailed(
  trx: Knex.Transaction,
  boss: PgBoss,
  failure: { generationId: string; from: 'pending' | 'processing'; errorCode: string },
): Promise<boolean> {
  const [row]: Pick<GenerationRow, 'id' | 'user_id' | 'cost' | 'submit_job_id'>[] = await trx('generations')
    .where({ id: failure.generationId, status: failure.from })
    .update({ status: 'failed', error_code: failure.errorCode, finished_at: trx.fn.now(), next_poll_at: null, dispatch_until: null })
    .returning(['id', 'user_id', 'cost', 'submit_job_id']);
  if (!row) return false;
  await credit(trx, { userId: row.user_id, kind: 'refund', amount: row.cost, reference: row.id });
  await releaseSlot(trx, row.id);
  if (failure.from === 'pending' && row.submit_job_id) await finishSubmitJob(boss, trx, row.submit_job_id);
  await announceTerminalStatus(trx, boss, { id: row.id, user_id: row.user_id, status: 'failed', error_code: failure.errorCode });
  return true;
}
