import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { announceTerminalStatus, HAS_PUSH_DEVICE } from './announce';
import { recordEarning, type EarningTerms } from '../user-effects/record-earning';
import type { GenerationRow, StoredGenerationPreview } from './model';
import { tallySuccess } from './roll-up-success-counts';

/** What a success's RETURNING gives the steps that follow it in the same transaction. */
export type SucceededRow = Pick<GenerationRow, 'id' | 'user_id' | 'effect_id' | 'cost'> & { has_push_device: boolean };

export const SUCCEEDED_RETURNING = `id, user_id, effect_id, cost, ${HAS_PUSH_DEVICE}`;

/**
 * processing -> succeeded, once the result is stored and its preview made by the `media` role (or
 * its copy failed: `preview` null).
 */
export async function succeedGeneration(
  trx: Knex.Transaction,
  boss: PgBoss,
  outcome: { generationId: string; preview: StoredGenerationPreview | null },
  earnings: EarningTerms,
): Promise<boolean> {
  const { rows: [row] } = await trx.raw<{ rows: SucceededRow[] }>(
    `update generations set status = 'succeeded', preview = :preview, finished_at = now()
     where id = :generationId and status = 'processing' and (result_key is not null or result_text is not null)
     returning ${SUCCEEDED_RETURNING}`,
    { generationId: outcome.generationId, preview: outcome.preview ? JSON.stringify(outcome.preview) : null },
  );
  if (!row) return false;
  await followSuccess(trx, boss, row, earnings);
  return true;
}

/**
 * What every success does in its own transaction: tallies it for the catalog's popularity order;
 * with an approved user effect of another user, records its author's pending earning; announces it.
 */
export async function followSuccess(trx: Knex.Transaction, boss: PgBoss, row: SucceededRow, earnings: EarningTerms): Promise<void> {
  if (row.effect_id !== null) {
    await tallySuccess(trx, row.effect_id);
    await recordEarning(trx, { id: row.id, userId: row.user_id, effectId: row.effect_id, cost: row.cost }, earnings);
  }
  await announceTerminalStatus(trx, boss, { id: row.id, user_id: row.user_id, status: 'succeeded', error_code: null, has_push_device: row.has_push_device });
}
