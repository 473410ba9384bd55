import type { Knex } from 'knex';

/**
 * pending -> reversed for every pending earning of a user effect an operator removed: they never
 * settle. Settled ones stay (the credits were the author's). Answers how many were reversed.
 */
export async function reversePendingEarnings(trx: Knex.Transaction, userEffectId: string): Promise<number> {
  const reversed = await trx.raw<{ rowCount: number }>(
    `update user_effect_earnings set status = 'reversed', reversed_at = now()
     where user_effect_id = :userEffectId and status = 'pending'`,
    { userEffectId },
  );
  return reversed.rowCount;
}
