import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { enqueue } from '../queues';
import { announceUserEffect } from './announce-user-effect';
import type { UserEffectRow } from './model';

/**
 * private -> processing (public now), a new moderation round with its job. Its catalog effect stays
 * its author's only until the round approves it. Null when the user effect is not the user's
 * `private` one (the caller tells absent from another status).
 */
export async function publishUserEffect(trx: Knex.Transaction, boss: PgBoss, target: { userEffectId: string; userId: string }): Promise<UserEffectRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: UserEffectRow[] }>(
    `update user_effects set status = 'processing', visibility = 'public', moderation_round = moderation_round + 1,
       verdict = null, verdict_reason = null, submitted_at = now(), updated_at = now()
     where id = :userEffectId and user_id = :userId and status = 'private'
     returning *`,
    target,
  );
  if (!row) return null;
  await enqueue(boss, trx, 'user-effect-moderation', { userEffectId: row.id, round: row.moderation_round });
  await announceUserEffect(trx, row);
  return row;
}
