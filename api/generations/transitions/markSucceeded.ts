import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { GenerationRow, StoredGenerationPreview } from '../model';
import { announceTerminalStatus } from './announce';

/**
 * processing -> succeeded, once the result is stored and its preview made (or its copy failed:
 * `preview` null). Counts the success for the catalog's popularity order.
 */
export async function markSucceeded(
  trx: Knex.Transaction,
  boss: PgBoss,
  outcome: { generationId: string; preview: StoredGenerationPreview | null },
): Promise<boolean> {
  const [row]: Pick<GenerationRow, 'id' | 'user_id' | 'effect_id'>[] = await trx('generations')
    .where({ id: outcome.generationId, status: 'processing' })
    .whereNotNull('result_key')
    .update({ status: 'succeeded', preview: outcome.preview ? JSON.stringify(outcome.preview) : null, finished_at: trx.fn.now() })
    .returning(['id', 'user_id', 'effect_id']);
  if (!row) return false;
  await trx('effects').where({ id: row.effect_id }).increment('success_count', 1);
  await announceTerminalStatus(trx, boss, { id: row.id, user_id: row.user_id, status: 'succeeded', error_code: null });
  return true;
}
