import type { Knex } from 'knex';
import { closeUnregistered } from '../../db/payments/close-unregistered';
import type { PaymentRow } from '../../db/payments/model';
import { orderRegistrationOf } from '../../services/payments/order-registration';
import { ProcessorRejectedError, ProcessorUnavailableError } from '../../clients/payment-processor/errors';
import { isOutage } from '../../common/circuit';
import { recordRegistration } from '../../db/payments/record-registration';
import type { Services } from '../../services';
import { errors, type ApiError } from '../http/errors';
import type { TwoPhase } from '../idempotency/create-once';

/**
 * What every checkout shares (`POST /v1/payments` for a pack, `POST /v1/subscriptions` for a plan's
 * first period): one creation per user at a time, the cap on unfinished payments, and the order's
 * registration at the processor in the second phase of `createOnce`.
 */

/** Contract: `409 request_in_progress` lasts at most about 1.5 minutes. */
const inProgressForSeconds = 90;

const maxUnfinishedPayments = 5;

/** One checkout per user at a time: the counts a checkout reads must not be read by two at once. */
export async function lockCheckouts(trx: Knex.Transaction, userId: string): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`payments:${userId}`]);
}

/** 429 without Retry-After: a slot frees when a payment becomes terminal or expires, not at a known time. */
export async function checkUnfinishedPayments(trx: Knex.Transaction, userId: string): Promise<void> {
  const [{ count }] = await trx('payments').where({ user_id: userId, status: 'created' }).count<{ count: number }[]>('* as count');
  if (count >= maxUnfinishedPayments) throw errors.rateLimited();
}

/**
 * Registers the payment's order at the processor and keeps its page. A processor that refuses or is
 * silent, or payments switched off meanwhile, is a refusal (`503`): the caller closes the payment.
 */
async function registerAtProcessor(services: Services, paymentId: string): Promise<Registered | { refusal: ApiError }> {
  const { db, log, config } = services;
  if (!config.payments.enabled) return { refusal: errors.providerUnavailable('Payments are switched off.') };
  const payment = await db('payments').where({ id: paymentId }).first<PaymentRow>('*');
  try {
    const order = await services.paymentProcessor.registerOrder(await orderRegistrationOf(db, config.publicBaseUrl, payment));
    const registered = await recordRegistration(db, payment.id, order);
    return { payment: registered ?? (await db('payments').where({ id: payment.id }).first<PaymentRow>('*')), paymentUrl: order.paymentUrl };
  } catch (error) {
    if (!(error instanceof ProcessorUnavailableError || error instanceof ProcessorRejectedError)) throw error;
    // An outage is warned about once by the processor's circuit, not once per payer.
    log[isOutage(error) ? 'info' : 'warn']({ paymentId: payment.id, err: error }, 'payments: the processor did not register the order; payment closed');
    return { refusal: errors.providerUnavailable('The payment processor is unavailable, try again later.') };
  }
}

export interface Registered {
  payment: PaymentRow;
  paymentUrl: string;
}

/**
 * The second phase of a checkout in `createOnce`: the payment of the object just created (a payment
 * itself, or a subscription's first) is registered at the processor and the object answered with
 * its page; a processor that registered nothing closes the payment (and with it a subscription).
 */
export function checkoutPhase<Answer>(services: Services, checkout: {
  paymentOf(db: Knex, objectId: string): Promise<string>;
  answer(objectId: string, registered: Registered): Promise<Answer>;
}): TwoPhase<Answer> {
  return {
    inProgressForSeconds,
    call: async (objectId) => {
      const registered = await registerAtProcessor(services, await checkout.paymentOf(services.db, objectId));
      return 'refusal' in registered ? registered : { answer: await checkout.answer(objectId, registered) };
    },
    close: async (trx, objectId) => { await closeUnregistered(trx, await checkout.paymentOf(trx, objectId)); },
  };
}
