import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { notify } from '../channels';
import { enqueue } from '../queues';
import type { RejectionReason } from './model';

/**
 * Keeps the moderation model's verdict of the round and hands the user effect to the media role
 * (`user-effect-media`), which builds the sample's preview and only then moves the status. Guarded
 * on the round and on no verdict yet: a late or duplicate moderation job changes nothing.
 */
export async function recordVerdict(
  trx: Knex.Transaction,
  boss: PgBoss,
  verdict: { userEffectId: string; round: number; verdict: 'approved' | 'rejected'; reason: RejectionReason | null },
): Promise<boolean> {
  const recorded = await trx.raw<{ rowCount: number }>(
    `update user_effects set verdict = :verdict, verdict_reason = :reason, updated_at = now()
     where id = :userEffectId and status = 'processing' and moderation_round = :round and verdict is null`,
    verdict,
  );
  if (!recorded.rowCount) return false;
  await enqueue(boss, trx, 'user-effect-media', { userEffectId: verdict.userEffectId, round: verdict.round });
  await notify(trx, 'user_effect_media', { id: verdict.userEffectId });
  return true;
}
