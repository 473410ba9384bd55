import type { ProductRow } from '../db/payments/model';
import { seedSubscriptionPlans } from '../db/subscriptions/seed-plans';
import type { PlanRow, SubscriptionRow } from '../db/subscriptions/model';
import { services } from './harness';
import { freshShowcase, operator, payAs, type Testbed } from './payment-testbed';
import type { TestUser } from './users';
import { eventually } from '../scripts/wait';

/** Subscriptions in tests: the demo plans, subscribing over HTTP, paying, and moving a period's end. */

/** An empty database with the demo showcase, its offer and the demo plans (their offer switched off). */
export async function freshPlans(): Promise<{ products: Record<string, ProductRow>; plans: Record<string, PlanRow> }> {
  const products = await freshShowcase();
  await seedSubscriptionPlans(services().db);
  const rows: PlanRow[] = await services().db('subscription_plans').select('*');
  return { products, plans: Object.fromEntries(rows.map((row) => [row.code, row])) };
}

export function subscriptionRow(id: string): Promise<SubscriptionRow> {
  return services().db('subscriptions').where({ id }).first('*');
}

export function waitForSubscription(id: string, accept: (row: SubscriptionRow) => boolean, timeoutMs = 5000): Promise<SubscriptionRow> {
  return eventually(() => subscriptionRow(id), accept, timeoutMs);
}

/** `POST /v1/subscriptions` that must answer 201; the body. */
export async function subscribe(bed: Testbed, user: TestUser, planId: string, key?: string) {
  const answer = await bed.api.post('/v1/subscriptions', { plan_id: planId }, { token: user.token, headers: key ? { 'Idempotency-Key': key } : {} });
  if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status}: ${answer.text}`);
  return answer.body;
}

/** Subscribes and pays the first period on the processor's page; answers the active subscription. */
export async function activeSubscription(bed: Testbed, user: TestUser, planId: string): Promise<SubscriptionRow> {
  const created = await subscribe(bed, user, planId);
  await payAs(created.payment_url, 'success');
  return waitForSubscription(created.id, (row) => row.status === 'active' && row.card_binding_id !== null);
}

/**
 * Moves the subscription's current period (and its plan credits' burn) so that it ends
 * `secondsFromNow` from now, as if time had passed; the clock looks at it at once.
 */
export async function periodEndsIn(subscriptionId: string, secondsFromNow: number): Promise<void> {
  const { db } = services();
  await db.raw(
    `update subscriptions set
       current_period_end = now() + make_interval(secs => :secondsFromNow),
       current_period_start = now() + make_interval(secs => :secondsFromNow) - make_interval(secs => period_days * billing_day_s),
       next_action_at = now()
     where id = :subscriptionId`,
    { subscriptionId, secondsFromNow },
  );
  await db.raw(
    `update plan_credit_buckets set expires_at = now() + make_interval(secs => :secondsFromNow)
     where subscription_id = :subscriptionId and burned_at is null`,
    { subscriptionId, secondsFromNow },
  );
}

/** An operator action on the order that saved the subscription's card (refund, chargeback, decline-next). */
export async function operatorOnFirstOrder(bed: Testbed, subscriptionId: string, action: string): Promise<number> {
  const payment = await services().db('payments').where({ subscription_id: subscriptionId, period: 1 }).first('id');
  return operator(bed, payment.id, action);
}
