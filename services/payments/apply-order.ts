import type { Knex } from 'knex';
import type { Services } from '..';
import { recordCardBinding } from '../../db/subscriptions/record-card-binding';
import { markPaymentExpired } from '../../db/payments/mark-payment-expired';
import { markPaymentFailed } from '../../db/payments/mark-payment-failed';
import { markPaymentRefunded } from '../../db/payments/mark-payment-refunded';
import { markPaymentSucceeded } from '../../db/payments/mark-payment-succeeded';
import type { PaymentRow } from '../../db/payments/model';
import type { ProcessorOrder } from '../../clients/payment-processor/payment-processor';
import { recordReceipt } from '../../db/payments/record-receipt';

/**
 * Brings a payment to the state the processor reports for its order. This is the one way to the
 * truth for the webhook, refresh and reconciliation alike: a notification only says "look", and
 * the status answer decides. Each move is a guarded transition, so duplicates, late and out-of-order
 * callers, and concurrent ones, change nothing twice.
 */
export async function applyProcessorOrder(services: Services, payment: PaymentRow, order: ProcessorOrder): Promise<void> {
  await services.db.transaction((trx) => applyProcessorOrderIn(trx, services, payment, order));
}

/** `applyProcessorOrder` inside the caller's transaction (a renewal job applies a batch of orders in one). */
export async function applyProcessorOrderIn(trx: Knex.Transaction, services: Pick<Services, 'log' | 'config'>, payment: PaymentRow, order: ProcessorOrder): Promise<void> {
  const { log } = services;
  const settings = services.config.payments;
  if (order.paymentId !== payment.id || order.amountMinor !== payment.amount_minor) {
    // Never credit on an answer about another order or another amount.
    log.error({ paymentId: payment.id, orderId: order.orderId, orderNumber: order.paymentId, amount: order.amountMinor }, 'payments: processor order does not match the payment');
    return;
  }
  switch (order.state) {
    case 'created':
      return;
    case 'succeeded':
      if (!(await markPaymentSucceeded(trx, payment.id, order.receiptUrl, settings)) && order.receiptUrl) {
        await recordReceipt(trx, payment.id, order.receiptUrl);
      }
      // A subscription's first paid order saved the card its renewals are charged with (a renewal's
      // order names the card it was charged with: nothing new to keep).
      if (order.bindingId && payment.subscription_id && payment.period === 1) await recordCardBinding(trx, payment.id, order.bindingId);
      return;
    case 'failed':
      await markPaymentFailed(trx, payment.id, settings);
      return;
    case 'expired':
      await markPaymentExpired(trx, payment.id, settings);
      return;
    case 'refunded':
      // Paid and given back before we saw the capture: credit, then revoke, so the history tells it.
      await markPaymentSucceeded(trx, payment.id, order.receiptUrl, settings);
      await markPaymentRefunded(trx, payment.id);
      return;
  }
}
