import { applyProcessorOrder } from '../../db/payments/apply-order';
import { closeUnregistered } from '../../db/payments/close-unregistered';
import { markPaymentFailed } from '../../db/payments/mark-payment-failed';
import type { PaymentRow } from '../../db/payments/model';
import { orderRegistration } from '../../db/payments/order-registration';
import { ProcessorRejectedError } from '../../db/payments/processor/errors';
import { recordRegistration } from '../../db/payments/record-registration';
import { expireSubscription } from '../../db/subscriptions/expire-subscription';
import { renewalChargeOf, type RenewalCharge } from '../../db/subscriptions/renewal-charge';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

/**
 * The `subscription-renew` job of the worker role: charges the subscription's saved card for the
 * payment the clock made for its next period (`workers/subscriptions/clock.ts`), server-to-server,
 * then reads the order's status and applies it like any payment (`applyProcessorOrder`): success
 * starts the period and grants its credits, a decline makes the subscription `past_due`.
 *
 * A period is charged once whatever runs twice: its payment is unique per (subscription, period,
 * attempt) and its id is the processor's order number, so a retried job gets the same order back
 * from the registration; a registered order is charged only while the processor still shows it
 * untried, and the processor captures an order at most once. An outcome the processor could not
 * tell (timeout) leaves the payment `created` for reconciliation, as for any payment.
 */
export type RenewalOutcome = 'applied' | 'skipped' | 'closed' | 'refused';

export async function chargeRenewal(services: Services, paymentId: string): Promise<RenewalOutcome> {
  const { db, log, config, paymentProcessor: processor } = services;
  const charge = await renewalChargeOf(db, paymentId);
  if (!charge?.payment.subscription_id || charge.payment.status !== 'created') return 'skipped';
  const { payment, subscription } = charge;
  let orderId = payment.processor_order_id;
  if (orderId) {
    // A retried job: the charge may have happened before the job broke.
    const order = await processor.getOrder(orderId);
    if (order.state !== 'created') {
      await applyProcessorOrder(services, payment, order);
      return 'applied';
    }
  }
  if (!subscription || !chargeable(subscription, payment)) {
    // Cancelled, revoked or left without a card while the job waited: nothing is charged. A cancelled
    // one ends now rather than at a retry; an order not registered yet is closed (the subscription
    // takes it as a declined charge, or ignores it when it moved on); a registered one expires at the
    // processor and reconciliation closes it.
    await db.transaction(async (trx) => {
      if (subscription?.cancel_at_period_end) {
        await expireSubscription(trx, { id: subscription.id, from: ['active', 'past_due'], reason: 'canceled', period: payment.period! - 1 });
      }
      if (!orderId) await closeUnregistered(trx, payment.id);
    });
    return 'closed';
  }
  if (!orderId) {
    try {
      const order = await processor.registerOrder(orderRegistration(config.publicBaseUrl, payment, charge.sold));
      await recordRegistration(db, payment.id, order);
      orderId = order.orderId;
    } catch (error) {
      if (!(error instanceof ProcessorRejectedError)) throw error;
      log.error({ paymentId, err: error }, 'subscriptions: the processor refused to register a renewal order');
      await db.transaction((trx) => closeUnregistered(trx, payment.id));
      return 'closed';
    }
  }
  let refused: ProcessorRejectedError | null = null;
  try {
    await processor.chargeBinding({ orderId, bindingId: subscription.card_binding_id! });
  } catch (error) {
    if (!(error instanceof ProcessorRejectedError)) throw error;
    refused = error;
  }
  // Charged or declined, the order's status says so; a refusal may also mean another run charged it.
  const order = await processor.getOrder(orderId);
  if (refused && order.state === 'created') {
    // The processor will not charge this order (an unknown card, say): taken as a decline.
    log.warn({ paymentId, err: refused }, 'subscriptions: the processor refused a renewal charge');
    await db.transaction((trx) => markPaymentFailed(trx, payment.id, config.payments));
    return 'refused';
  }
  await applyProcessorOrder(services, payment, order);
  return 'applied';
}

/** Still to be charged: live, not cancelled, this payment's period is the next one, and a card is saved. */
function chargeable(subscription: NonNullable<RenewalCharge['subscription']>, payment: PaymentRow): boolean {
  return (subscription.status === 'active' || subscription.status === 'past_due')
    && !subscription.cancel_at_period_end
    && subscription.period === payment.period! - 1
    && subscription.card_binding_id !== null;
}

export async function startSubscriptionRenewals(services: Services): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'subscription-renew',
    // Each job waits on the processor three times: many at once keep a batch of renewals moving, but
    // not so many that a busy processor answers them after the client's timeout.
    concurrency: 16,
    idleMs: 500,
    handle: async (job) => { await chargeRenewal(services, job.data.paymentId); },
  });
}
