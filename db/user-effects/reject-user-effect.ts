import type { Knex } from 'knex';
import { hideCatalogEffect } from './catalog-effect';
import { announceUserEffect } from './announce-user-effect';
import type { UserEffectRow } from './model';

/**
 * processing -> rejected with the moderation model's reason (or `bad_sample` when the model approved
 * a sample the preview cannot be made of: `preview` null); `rejected_at` starts the submission
 * cooldown and counts towards the lock (docs/mobile.md, "The marketplace of user effects"). A catalog effect it had from an earlier
 * round (a publish from `private`) is hidden: a rejected user effect launches for no one.
 */
export async function rejectUserEffect(trx: Knex.Transaction, target: { userEffectId: string; round: number }): Promise<UserEffectRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: UserEffectRow[] }>(
    `update user_effects set status = 'rejected', rejected_at = now(), updated_at = now(),
       rejection_reason = case when verdict = 'rejected' then verdict_reason else 'bad_sample' end
     where id = :userEffectId and status = 'processing' and moderation_round = :round
       and (verdict = 'rejected' or (verdict = 'approved' and preview is null))
     returning *`,
    target,
  );
  if (!row) return null;
  if (row.effect_id !== null) await hideCatalogEffect(trx, row.effect_id);
  await announceUserEffect(trx, row);
  return row;
}
