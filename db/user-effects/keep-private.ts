import type { Knex } from 'knex';
import { createCatalogEffect, makeCatalogEffectPrivate } from './catalog-effect';
import { announceUserEffect } from './announce-user-effect';
import type { UserEffectRow, UserEffectRuns } from './model';

/**
 * processing -> private, for a private user effect whose round the moderation model approved and
 * whose preview exists: its catalog effect is made for its author only, unlisted.
 */
export async function keepPrivate(trx: Knex.Transaction, target: { userEffectId: string; round: number }, runs: UserEffectRuns): Promise<UserEffectRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: UserEffectRow[] }>(
    `update user_effects set status = 'private', rejection_reason = null, updated_at = now()
     where id = :userEffectId and status = 'processing' and moderation_round = :round
       and verdict = 'approved' and visibility = 'private' and preview is not null
     returning *`,
    target,
  );
  if (!row) return null;
  if (row.effect_id === null) row.effect_id = await createCatalogEffect(trx, row, row.user_id, runs[row.output_type]);
  else await makeCatalogEffectPrivate(trx, row.effect_id, row.user_id);
  await announceUserEffect(trx, row);
  return row;
}
