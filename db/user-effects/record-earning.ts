import type { Config } from '../../config';

/** The author's share and when it settles (docs/mobile.md, "The marketplace of user effects": 20 %, 7 billing days). */
export interface EarningTerms {
  sharePercent: number;
  settleAfterS: number;
}

export function earningTerms(config: Pick<Config, 'marketplace' | 'billingDayS'>): EarningTerms {
  return { sharePercent: config.marketplace.authorSharePercent, settleAfterS: config.marketplace.settleBillingDays * config.billingDayS };
}

/**
 * none -> pending, in the statement of a generation's success (`succeed-generation.ts`): for each
 * generation `source` names (`id`, `user_id`, `effect_id`, `cost`) whose effect is an approved user
 * effect of another user, its author earns `sharePercent` of the cost, rounded down (nothing when
 * that is 0). One earning per generation (unique), so a repeated success could not earn twice even
 * if it happened. Its bindings are `earningBindings`'.
 */
export function recordEarningsOf(source: string): string {
  return `insert into user_effect_earnings (user_effect_id, effect_id, generation_id, user_id, amount, status, settles_at)
    select ue.id, ue.effect_id, earned.id, ue.user_id, earned.amount, 'pending', now() + make_interval(secs => :earningSettleAfterS)
    from (select id, user_id, effect_id, cost * :earningSharePercent / 100 as amount from ${source}) earned
    join user_effects ue on ue.effect_id = earned.effect_id
    where ue.status = 'approved' and ue.user_id <> earned.user_id and earned.amount > 0
    on conflict (generation_id) do nothing`;
}

/** The named bindings of `recordEarningsOf`: whole numbers, so `cost * share / 100` rounds down in SQL. */
export function earningBindings(terms: EarningTerms): { earningSharePercent: number; earningSettleAfterS: number } {
  if (!Number.isSafeInteger(terms.sharePercent) || !Number.isSafeInteger(terms.settleAfterS)) {
    throw new RangeError('earning terms are whole numbers');
  }
  return { earningSharePercent: terms.sharePercent, earningSettleAfterS: terms.settleAfterS };
}
