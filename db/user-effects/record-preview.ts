import type { Knex } from 'knex';
import type { StoredUserEffectPreview } from './model';

/** Keeps the sample's preview copies (made by the media role) while the round still waits for them. */
export async function recordPreview(
  trx: Knex.Transaction,
  preview: { userEffectId: string; round: number; posterKey: string; preview: StoredUserEffectPreview },
): Promise<boolean> {
  const recorded = await trx.raw<{ rowCount: number }>(
    `update user_effects set poster_key = :posterKey, preview = :preview::jsonb, updated_at = now()
     where id = :userEffectId and status = 'processing' and moderation_round = :round`,
    { userEffectId: preview.userEffectId, round: preview.round, posterKey: preview.posterKey, preview: JSON.stringify(preview.preview) },
  );
  return recorded.rowCount > 0;
}
