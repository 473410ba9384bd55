import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { enqueueInTransaction, queues } from '../../../db/boss';
import { releaseSlot } from '../../../pool/releaseSlot';
import { mediaChannel, type MediaJobData } from '../model';

/**
 * processing (provider running) -> processing (result stored, preview to make). Not a status change
 * for clients, so no event. The preview is made by the `media` role. The poll loop gave the slot
 * back when the provider said done; releasing it here too covers a worker that stored a result
 * another one had polled. Guarded: the first stored result wins.
 */
export async function markResultStored(
  trx: Knex.Transaction,
  boss: PgBoss,
  result: { generationId: string; key: string; contentType: string },
): Promise<boolean> {
  const stored = await trx('generations')
    .where({ id: result.generationId, status: 'processing' })
    .whereNull('result_key')
    .update({ result_key: result.key, result_content_type: result.contentType, result_stored_at: trx.fn.now(), next_poll_at: null });
  if (stored !== 1) return false;
  await releaseSlot(trx, result.generationId);
  const job: MediaJobData = { generationId: result.generationId };
  await enqueueInTransaction(boss, trx, queues.generationMedia, job, { retryLimit: 3, retryDelay: 5, retryBackoff: true, expireInSeconds: 600 });
  // Wakes the media workers now rather than at their next poll (pg-boss polls at most every 0.5 s).
  await trx.raw('select pg_notify(?, ?)', [mediaChannel, result.generationId]);
  return true;
}
