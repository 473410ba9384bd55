import type { Knex } from 'knex';
import { applyProcessorOrderIn } from '../../services/payments/apply-order';
import { closeUnregistered } from '../../db/payments/close-unregistered';
import { markPaymentFailed } from '../../db/payments/mark-payment-failed';
import type { PaymentRow } from '../../db/payments/model';
import { orderRegistration } from '../../services/payments/order-registration';
import { ProcessorRejectedError } from '../../clients/payment-processor/errors';
import type { ProcessorOrder } from '../../clients/payment-processor/payment-processor';
import { recordRegistration } from '../../db/payments/record-registration';
import { expireSubscription } from '../../db/subscriptions/expire-subscription';
import { renewalChargesOf, type RenewalCharge } from '../../db/subscriptions/renewal-charge';
import type { RunningPart, Services } from '../../services';
import { startBatchQueueConsumer } from '../runtime/queue-consumer';

/** Renewal jobs handled together by one worker. */
const renewalJobBatchSize = 8;

/**
 * The `subscription-renew` job of the worker role: charges the subscription's saved card for the
 * payment the clock made for its next period (`workers/subscriptions/clock.ts`), server-to-server,
 * then reads the order's status and applies it like any payment (`applyProcessorOrderIn`): success
 * starts the period and grants its credits, a decline makes the subscription `past_due`.
 *
 * A period is charged once whatever runs twice: its payment is unique per (subscription, period,
 * attempt) and its id is the processor's order number, so a retried job gets the same order back
 * from the registration; a registered order is charged only while the processor still shows it
 * untried, and the processor captures an order at most once. An outcome the processor could not
 * tell (timeout) leaves the payment `created` for reconciliation, as for any payment.
 */
export type RenewalOutcome = 'applied' | 'skipped' | 'closed' | 'refused';

/** What a charge left to write: the order's status to apply, or a refused charge to take as a decline. */
type Settlement = { payment: PaymentRow; order: ProcessorOrder; outcome: 'applied' } | { payment: PaymentRow; order: null; outcome: 'refused' };

export async function chargeRenewal(services: Services, paymentId: string): Promise<RenewalOutcome> {
  const result = (await chargeRenewals(services, [paymentId])).get(paymentId)!;
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

/**
 * A batch of renewal jobs: one read for all their payments, the processor calls of each at once,
 * and the outcomes written in one transaction (in payment order). Should that transaction fail, each
 * outcome is written in its own, so one bad row holds back only itself. Answers each payment's
 * outcome, or why it failed (its job is retried).
 */
export async function chargeRenewals(services: Services, paymentIds: readonly string[]): Promise<Map<string, PromiseSettledResult<RenewalOutcome>>> {
  const charges = await renewalChargesOf(services.db, paymentIds);
  const charged = await Promise.allSettled(paymentIds.map((paymentId) => charge(services, charges.get(paymentId) ?? null)));
  const results = new Map(paymentIds.map((paymentId, index): [string, PromiseSettledResult<RenewalOutcome | Settlement>] => [paymentId, charged[index]]));
  const settlements = [...results.values()]
    .flatMap((result) => (result.status === 'fulfilled' && typeof result.value === 'object' ? [result.value] : []))
    .sort((a, b) => (a.payment.id < b.payment.id ? -1 : 1));
  for (const [paymentId, settled] of await writeSettlements(services, settlements)) results.set(paymentId, settled);
  return results as Map<string, PromiseSettledResult<RenewalOutcome>>;
}

async function writeSettlements(services: Services, settlements: Settlement[]): Promise<Map<string, PromiseSettledResult<RenewalOutcome>>> {
  const { db, log } = services;
  const write = (trx: Knex.Transaction, settlement: Settlement) => (settlement.order
    ? applyProcessorOrderIn(trx, services, settlement.payment, settlement.order)
    : markPaymentFailed(trx, settlement.payment.id, services.config.payments).then(() => undefined));
  const written = (settlement: Settlement): [string, PromiseSettledResult<RenewalOutcome>] => [settlement.payment.id, { status: 'fulfilled', value: settlement.outcome }];
  if (settlements.length === 0) return new Map();
  try {
    await db.transaction(async (trx) => {
      for (const settlement of settlements) await write(trx, settlement);
    });
    return new Map(settlements.map(written));
  } catch (error) {
    if (settlements.length === 1) return new Map([[settlements[0].payment.id, { status: 'rejected', reason: error }]]);
    log.warn({ err: error, payments: settlements.length }, 'subscriptions: a batch of renewal outcomes failed; writing each on its own');
    const one = await Promise.allSettled(settlements.map((settlement) => db.transaction((trx) => write(trx, settlement))));
    return new Map(settlements.map((settlement, index) => {
      const result = one[index];
      return result.status === 'fulfilled' ? written(settlement) : [settlement.payment.id, result];
    }));
  }
}

/** One renewal's processor calls (each guarded as said above); answers what is left to write. */
async function charge(services: Services, renewal: RenewalCharge | null): Promise<RenewalOutcome | Settlement> {
  const { db, log, config, paymentProcessor: processor } = services;
  if (!renewal?.payment.subscription_id || renewal.payment.status !== 'created') return 'skipped';
  const { payment, subscription } = renewal;
  const paymentId = payment.id;
  let orderId = payment.processor_order_id;
  if (orderId) {
    // A retried job: the charge may have happened before the job broke.
    const order = await processor.getOrder(orderId);
    if (order.state !== 'created') return { payment, order, outcome: 'applied' };
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
      const order = await processor.registerOrder(orderRegistration(config.publicBaseUrl, payment, renewal.sold));
      await recordRegistration(db, payment.id, order);
      orderId = order.orderId;
    } catch (error) {
      if (!(error instanceof ProcessorRejectedError)) throw error;
      // Refused as a duplicate when another run registered this order and charged it meanwhile:
      // that run has the payment (its order is recorded), and there is nothing to close here.
      if (!(await db.transaction((trx) => closeUnregistered(trx, payment.id)))) return 'skipped';
      log.error({ paymentId, err: error }, 'subscriptions: the processor refused to register a renewal order');
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
    return { payment, order: null, outcome: 'refused' };
  }
  return { payment, order, outcome: 'applied' };
}

/** Still to be charged: live, not cancelled, this payment's period is the next one, and a card is saved. */
function chargeable(subscription: NonNullable<RenewalCharge['subscription']>, payment: PaymentRow): boolean {
  return (subscription.status === 'active' || subscription.status === 'past_due')
    && !subscription.cancel_at_period_end
    && subscription.period === payment.period! - 1
    && subscription.card_binding_id !== null;
}

export async function startSubscriptionRenewals(services: Services): Promise<RunningPart> {
  return startBatchQueueConsumer(services, {
    queue: 'subscription-renew',
    // Each job waits on the processor three times: many at once keep renewals moving, but not so many
    // that a busy processor answers them after the client's timeout. Batches of 8 share their reads,
    // their writes and their fetch and completion.
    concurrency: 4,
    batchSize: renewalJobBatchSize,
    idleMs: 500,
    handleBatch: async (jobs) => {
      const results = await chargeRenewals(services, jobs.map((job) => job.data.paymentId));
      return new Map(jobs.flatMap((job) => {
        const result = results.get(job.data.paymentId)!;
        return result.status === 'rejected' ? [[job.id, result.reason as Error]] : [];
      }));
    },
  });
}
