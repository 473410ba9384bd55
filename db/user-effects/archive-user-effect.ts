import type { Knex } from 'knex';
import { hideCatalogEffect } from './catalog-effect';
import { announceUserEffect } from './announce-user-effect';
import type { UserEffectRow } from './model';

/**
 * any status but archived -> archived, by its author (`DELETE /v1/user-effects/{id}`, `userId`
 * set) or by an operator (`userId` null, with a reason): its catalog effect is hidden for everyone.
 * A moderation round under way finds it no longer `processing` and changes nothing. Null when
 * there is no such user effect or it is archived already.
 */
export async function archiveUserEffect(
  trx: Knex.Transaction,
  target: { userEffectId: string; userId: string | null; by: 'author' | 'operator'; reason: string | null },
): Promise<UserEffectRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: UserEffectRow[] }>(
    `update user_effects set status = 'archived', archived_by = :by, archive_reason = :reason, updated_at = now()
     where id = :userEffectId and (:userId::uuid is null or user_id = :userId::uuid) and status <> 'archived'
     returning *`,
    target,
  );
  if (!row) return null;
  if (row.effect_id !== null) await hideCatalogEffect(trx, row.effect_id);
  await announceUserEffect(trx, row);
  return row;
}
