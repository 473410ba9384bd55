import type { Knex } from 'knex';
import { makeCatalogEffectPrivate } from './catalog-effect';
import { announceUserEffect } from './announce-user-effect';
import type { UserEffectRow } from './model';

/**
 * approved -> private (the author's move): the catalog effect leaves `community` and becomes its
 * author's only. Pending earnings stay: they were earned while it was public. Null when it is not
 * the user's `approved` one.
 */
export async function unpublishUserEffect(trx: Knex.Transaction, target: { userEffectId: string; userId: string }): Promise<UserEffectRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: UserEffectRow[] }>(
    `update user_effects set status = 'private', visibility = 'private', updated_at = now()
     where id = :userEffectId and user_id = :userId and status = 'approved'
     returning *`,
    target,
  );
  if (!row) return null;
  if (row.effect_id !== null) await makeCatalogEffectPrivate(trx, row.effect_id, row.user_id);
  await announceUserEffect(trx, row);
  return row;
}
