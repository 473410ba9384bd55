import type { Knex } from 'knex';

/**
 * The demo plans (docs/mobile.md, "Subscriptions"), seeded once into an empty `subscription_plans` at
 * start (an operator's later edits survive restarts), with an offer-only plan and a special offer
 * that sells it (a first month at half price, then the base price), switched off: the demo
 * showcase has one live offer (section 5); `update offers set enabled = true where code =
 * 'subscription_intro'` shows the plan offer.
 */
const plans = [
  { code: 'plan_week', title_ru: 'Неделя', title_en: 'Week', description_ru: '150 кредитов каждую неделю', description_en: '150 credits every week', period: 'week', price_minor: 19900, credits: 150, badge: null, position: 0, offer_only: false },
  { code: 'plan_month', title_ru: 'Месяц', title_en: 'Month', description_ru: '700 кредитов каждый месяц', description_en: '700 credits every month', period: 'month', price_minor: 59900, credits: 700, badge: 'popular', position: 1, offer_only: false },
  { code: 'plan_year', title_ru: 'Год', title_en: 'Year', description_ru: '9000 кредитов каждый год', description_en: '9000 credits every year', period: 'year', price_minor: 499000, credits: 9000, badge: 'best_value', position: 2, offer_only: false },
  // Sold only through `subscription_intro`: the first month for 299 RUB, then 599 RUB a month.
  { code: 'plan_month_intro', title_ru: 'Месяц: первый со скидкой', title_en: 'Month: the first one discounted', description_ru: '700 кредитов каждый месяц', description_en: '700 credits every month', period: 'month', price_minor: 29900, renewal_price_minor: 59900, credits: 700, badge: null, position: 100, offer_only: true },
];

const planOffers = [
  { code: 'subscription_intro', plan_code: 'plan_month_intro', window_seconds: 2 * 3600, max_issues_per_account: 1, position: 1, enabled: false },
];

const seedLock = 'seed:subscription-plans';

/** Returns true when it seeded something. */
export async function seedSubscriptionPlans(db: Knex): Promise<boolean> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [seedLock]);
    if (await trx('subscription_plans').first('id')) return false;
    await trx('subscription_plans').insert(plans.map((plan) => ({ renewal_price_minor: null, ...plan, currency: 643, enabled: true })));
    for (const offer of planOffers) {
      const { plan_code: planCode, ...fields } = offer;
      const plan = await trx('subscription_plans').where({ code: planCode }).first<{ id: string }>('id');
      await trx.raw(
        `insert into offers (code, plan_id, window_seconds, max_issues_per_account, position, enabled)
         values (:code, :planId, :window_seconds, :max_issues_per_account, :position, :enabled) on conflict (code) do nothing`,
        { ...fields, planId: plan.id },
      );
    }
    return true;
  });
}
