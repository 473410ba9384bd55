import type { Knex } from 'knex';
import { insertPayment } from '../../db/payments/insert-payment';
import type { PaymentRow, ProductRow } from '../../db/payments/model';
import type { PaymentMethod } from '../../common/payment-method';
import type { Services } from '../../services';
import { errors } from '../http/errors';
import type { IdempotencyKey } from '../idempotency/idempotency-key';
import { createOnce, type BoundObject } from '../idempotency/create-once';
import { checkOfferPurchase } from '../offers/offers';
import { checkoutPhase, checkUnfinishedPayments, lockCheckouts } from './checkout';
import { findPurchasableProduct } from './products';
import { paymentView, type PaymentView } from './views';

export interface CreatePaymentBody {
  product_id: string;
  method: PaymentMethod;
}

export interface CreatedPayment {
  statusCode: number;
  payment: PaymentView;
}

/** Checkouts that hold the pack's purchase limit: paid ones, and open ones that may still be paid. */
const limitStatuses = ['created', 'succeeded', 'refunded'];

/**
 * `POST /v1/payments`. Checks in the contract's order (422 before this; then 404, 403, 429, 503),
 * then two phases: a transaction inserts the payment and binds the key as "in progress", and the
 * processor is called outside it (up to ~10 s), so a repeat meanwhile gets `409 request_in_progress`
 * instead of waiting on a lock. A processor that registered nothing closes the payment and frees
 * the key in one transaction. A repeat after the first request broke on the server side (its
 * payment left without a page) registers it again: the processor returns the same order for the
 * same order number, so nothing is charged twice.
 */
export async function createPayment(services: Services, userId: string, body: CreatePaymentBody, idempotency: IdempotencyKey | null): Promise<CreatedPayment> {
  const { db } = services;
  const created = await createOnce({
    db,
    userId,
    idempotency,
    body,
    statusCode: 201,
    prepare: async () => {
      const product = await findPurchasableProduct(db, body.product_id);
      if (!product) throw errors.notFound('No such pack.');
      return product;
    },
    create: (trx, product) => insertPackPayment(trx, services, userId, product, body.method),
    find: (paymentId) => paymentAsRepeated(db, userId, paymentId),
    twoPhase: checkoutPhase(services, {
      paymentOf: async (_db, paymentId) => paymentId,
      answer: async (_paymentId, registered) => paymentView(registered.payment, registered.paymentUrl),
    }),
  });
  return { statusCode: created.statusCode, payment: created.body };
}

async function insertPackPayment(trx: Knex.Transaction, services: Services, userId: string, product: ProductRow, method: PaymentMethod): Promise<string> {
  const { config } = services;
  await lockCheckouts(trx, userId);
  const offerIssueId = await checkPurchaseRules(trx, userId, product);
  await checkUnfinishedPayments(trx, userId);
  if (!config.payments.enabled) throw errors.providerUnavailable('Payments are switched off.');
  return insertPayment(trx, {
    userId,
    sells: { productId: product.id },
    offerIssueId,
    amountMinor: product.price_minor,
    currency: product.currency,
    credits: product.credits,
    method,
  }, config.payments);
}

/** 403: the pack's per-account limit is used up, or an offer-only pack is not (or no longer) payable. */
async function checkPurchaseRules(trx: Knex.Transaction, userId: string, product: ProductRow): Promise<string | null> {
  if (product.purchase_limit !== null) {
    const [{ count }] = await trx('payments')
      .where({ user_id: userId, product_id: product.id })
      .whereIn('status', limitStatuses)
      .count<{ count: number }[]>('* as count');
    if (count >= product.purchase_limit) throw errors.forbidden('The purchase limit of this pack is used up.');
  }
  return product.offer_only ? checkOfferPurchase(trx, userId, { productId: product.id }) : null;
}

/**
 * A repeat gets the same payment with the same `payment_url` and its current status. A payment
 * left without a page while still `created` is unfinished; one closed before any page was given
 * out (so nobody can have paid it) frees the key, like a refused request.
 */
async function paymentAsRepeated(db: Knex, userId: string, paymentId: string): Promise<BoundObject<PaymentView>> {
  const payment = await db('payments').where({ id: paymentId, user_id: userId }).first<PaymentRow | undefined>('*');
  if (payment?.payment_url) return { state: 'done', answer: paymentView(payment, payment.payment_url) };
  return payment?.status === 'created' ? { state: 'unfinished' } : { state: 'closed' };
}
