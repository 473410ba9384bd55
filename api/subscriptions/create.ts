import type { Knex } from 'knex';
import type { PaymentRow } from '../../db/payments/model';
import { insertPendingSubscription } from '../../db/subscriptions/insert-pending';
import { liveStatuses, type PlanRow } from '../../db/subscriptions/model';
import type { Services } from '../../services';
import { errors } from '../http/errors';
import type { IdempotencyKey } from '../idempotency/idempotency-key';
import { createOnce, type BoundObject } from '../idempotency/create-once';
import { checkOfferPurchase } from '../offers/offers';
import { checkoutPhase, checkUnfinishedPayments, lockCheckouts } from '../payments/checkout';
import { findSubscribablePlan } from './plans';
import { findOwnSubscription, subscriptionView, type SubscriptionView } from './views';

export interface CreateSubscriptionBody {
  plan_id: string;
  /** Recurring charges need a saved card: `card` is the only method (and the default). */
  method: 'card';
}

/**
 * `POST /v1/subscriptions`, in the order of `POST /v1/payments`:
 * payments switched off `503`, unknown plan `404`, an offer plan not issued, over or paid `403`, a
 * live subscription to the plan `409 already_subscribed` (a repeat with the same Idempotency-Key
 * answers with the existing one instead, being answered before any check), too many unfinished
 * payments `429`. Then, as a payment does, in two phases (`createOnce`): the pending subscription and
 * its first period's payment are inserted and the key bound as in progress in one transaction, and
 * the order is registered at the processor outside it, asking to save the card. A processor that
 * registered nothing closes the payment, which ends the subscription (`expired`), and frees the key.
 */
export async function createSubscription(
  services: Services,
  userId: string,
  body: CreateSubscriptionBody,
  idempotency: IdempotencyKey | null,
): Promise<{ statusCode: number; subscription: SubscriptionView }> {
  const { db, config } = services;
  const created = await createOnce({
    db,
    userId,
    idempotency,
    body,
    statusCode: 201,
    prepare: async () => {
      if (!config.payments.enabled) throw errors.providerUnavailable('Payments are switched off.');
      const plan = await findSubscribablePlan(db, body.plan_id);
      if (!plan) throw errors.notFound('No such plan.');
      return plan;
    },
    create: (trx, plan) => insertSubscription(trx, services, userId, plan),
    find: (subscriptionId) => subscriptionAsRepeated(db, userId, subscriptionId),
    twoPhase: checkoutPhase(services, {
      paymentOf: async (query, subscriptionId) => (await firstPayment(query, subscriptionId)).id,
      answer: async (subscriptionId, registered) => subscriptionView((await findOwnSubscription(db, userId, subscriptionId))!, registered.paymentUrl),
    }),
  });
  return { statusCode: created.statusCode, subscription: created.body };
}

async function insertSubscription(trx: Knex.Transaction, services: Services, userId: string, plan: PlanRow): Promise<string> {
  await lockCheckouts(trx, userId);
  const offerIssueId = plan.offer_only ? await checkOfferPurchase(trx, userId, { planId: plan.id }) : null;
  const live = await trx('subscriptions').where({ user_id: userId, plan_id: plan.id }).whereIn('status', liveStatuses).first('id');
  if (live) throw errors.alreadySubscribed();
  await checkUnfinishedPayments(trx, userId);
  const { subscriptionId } = await insertPendingSubscription(trx, services.config.payments, { userId, plan, offerIssueId, billingDayS: services.config.billingDayS });
  return subscriptionId;
}

function firstPayment(db: Knex, subscriptionId: string): Promise<PaymentRow> {
  return db('payments').where({ subscription_id: subscriptionId, period: 1, attempt: 1 }).first<PaymentRow>('*');
}

/**
 * A repeat gets the subscription as it is now, with its first payment's page. A first payment left
 * without a page while still `created` is unfinished (registered now); one closed before any page
 * was given out frees the key, like a refused request.
 */
async function subscriptionAsRepeated(db: Knex, userId: string, subscriptionId: string): Promise<BoundObject<SubscriptionView>> {
  const subscription = await findOwnSubscription(db, userId, subscriptionId);
  const payment = subscription && (await firstPayment(db, subscription.id));
  if (subscription && payment?.payment_url) return { state: 'done', answer: subscriptionView(subscription, payment.payment_url) };
  return payment?.status === 'created' ? { state: 'unfinished' } : { state: 'closed' };
}
