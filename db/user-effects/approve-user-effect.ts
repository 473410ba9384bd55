import type { Knex } from 'knex';
import { createCatalogEffect, publishCatalogEffect } from './catalog-effect';
import { announceUserEffect } from './announce-user-effect';
import type { UserEffectRow, UserEffectRuns } from './model';

/**
 * processing -> approved, for a public user effect whose round the moderation model approved and
 * whose preview exists: its catalog effect is made (first round) or shown again (a publish from
 * `private`), listed in `community` with the user as author.
 */
export async function approveUserEffect(trx: Knex.Transaction, target: { userEffectId: string; round: number }, runs: UserEffectRuns): Promise<UserEffectRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: UserEffectRow[] }>(
    `update user_effects set status = 'approved', rejection_reason = null, approved_at = now(), updated_at = now()
     where id = :userEffectId and status = 'processing' and moderation_round = :round
       and verdict = 'approved' and visibility = 'public' and preview is not null
     returning *`,
    target,
  );
  if (!row) return null;
  row.effect_id ??= await createCatalogEffect(trx, row, null, runs[row.output_type]);
  await publishCatalogEffect(trx, row.effect_id);
  await announceUserEffect(trx, row);
  return row;
}
