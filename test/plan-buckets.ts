import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { services } from './harness';

/**
 * The plan-credit buckets agree with the ledger: each bucket holds exactly what the rows that name
 * it in `plan_share` moved (grant in, reserves out, refunds back, the burn out), a burned bucket
 * holds nothing, each bucket was granted by one row, and no balance is smaller than its open buckets.
 */
export async function expectPlanBucketsConsistent(): Promise<void> {
  const { db } = services();
  const { rows: drifted } = await db.raw(`
    with parts as (
      select (part->>'bucket')::uuid as bucket, sign(t.amount)::integer * (part->>'amount')::integer as moved
      from credit_transactions t, jsonb_array_elements(t.plan_share) as part
      where t.plan_share is not null
    )
    select b.id, b.credits, b.burned_at, coalesce(sum(p.moved), 0)::integer as moved
    from plan_credit_buckets b left join parts p on p.bucket = b.id
    group by b.id
    having b.credits <> coalesce(sum(p.moved), 0) or (b.burned_at is not null and b.credits <> 0)`);
  expect(drifted, 'buckets whose credits differ from what the ledger moved').to.deep.equal([]);
  const { rows: ungranted } = await db.raw(`
    select b.id from plan_credit_buckets b
    where (select count(*) from credit_transactions t where t.user_id = b.user_id and t.kind = 'plan_grant' and t.reference = b.payment_id::text) <> 1`);
  expect(ungranted, 'buckets without exactly one plan_grant row').to.deep.equal([]);
  const { rows: short } = await db.raw(`
    select u.id from users u
    join (select user_id, sum(credits) as open from plan_credit_buckets where burned_at is null group by user_id) b on b.user_id = u.id
    where u.balance < b.open`);
  expect(short, 'balances smaller than their open plan credits').to.deep.equal([]);
}

/**
 * A paid subscription period to grant plan credits for, straight in the database (the ledger's tests
 * need its rows, not its story): a plan, an active subscription of the user and its period's payment.
 */
export async function periodPaymentOf(userId: string, subscriptionId?: string): Promise<{ subscriptionId: string; paymentId: string }> {
  const { db } = services();
  let subscription = subscriptionId;
  let planId: string;
  if (!subscription) {
    [{ id: planId }] = await db('subscription_plans')
      .insert({ code: `plan-${randomUUID()}`, title_ru: 'План', title_en: 'Plan', period: 'week', price_minor: 100, credits: 10 })
      .returning('id');
    [{ id: subscription }] = await db('subscriptions')
      .insert({ user_id: userId, plan_id: planId, status: 'active', period_days: 7, billing_day_s: 86_400, credits: 10, renewal_price_minor: 100, currency: 643, period: 1 })
      .returning('id');
  } else {
    ({ plan_id: planId } = await db('subscriptions').where({ id: subscription }).first('plan_id'));
  }
  const period = 1 + Number((await db('payments').where({ subscription_id: subscription }).count<{ count: number }[]>('* as count'))[0].count);
  const [{ id: paymentId }] = await db('payments').insert({
    user_id: userId, plan_id: planId, subscription_id: subscription, period, attempt: 1, status: 'succeeded',
    amount_minor: 100, currency: 643, credits: 10, method: 'card', expires_at: db.fn.now(),
  }).returning('id');
  return { subscriptionId: subscription!, paymentId };
}
