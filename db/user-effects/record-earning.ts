import type { Knex } from 'knex';
import type { Config } from '../../config';

/** The author's share and when it settles (README, "Marketplace of user effects": 20 %, 7 billing days). */
export interface EarningTerms {
  sharePercent: number;
  settleAfterS: number;
}

export function earningTerms(config: Pick<Config, 'marketplace' | 'billingDayS'>): EarningTerms {
  return { sharePercent: config.marketplace.authorSharePercent, settleAfterS: config.marketplace.settleBillingDays * config.billingDayS };
}

/**
 * none -> pending, in the transaction of a generation's success: when the generation's effect is an
 * approved user effect and the generation is another user's, its author earns `sharePercent` of the
 * generation's cost, rounded down (nothing when that is 0). One earning per generation (unique), so
 * a repeated success could not earn twice even if it happened.
 */
export async function recordEarning(trx: Knex.Transaction, generation: { id: string; userId: string; effectId: string; cost: number }, terms: EarningTerms): Promise<boolean> {
  const amount = Math.floor((generation.cost * terms.sharePercent) / 100);
  if (amount <= 0) return false;
  const recorded = await trx.raw<{ rowCount: number }>(
    `insert into user_effect_earnings (user_effect_id, effect_id, generation_id, user_id, amount, status, settles_at)
     select ue.id, ue.effect_id, :generationId, ue.user_id, :amount, 'pending', now() + make_interval(secs => :settleAfterS)
     from user_effects ue
     where ue.effect_id = :effectId and ue.status = 'approved' and ue.user_id <> :userId
     on conflict (generation_id) do nothing`,
    { generationId: generation.id, userId: generation.userId, effectId: generation.effectId, amount, settleAfterS: terms.settleAfterS },
  );
  return recorded.rowCount > 0;
}
