import type { Knex } from 'knex';
import { closeUnregistered } from '../../db/payments/close-unregistered';
import type { PaymentRow, ProductRow } from '../../db/payments/model';
import { ProcessorRejectedError, ProcessorUnavailableError } from '../../db/payments/processor/errors';
import type { PaymentMethod } from '../../db/payments/processor/payment-processor';
import { CURRENCY_RUB, SESSION_TIMEOUT_SECS } from '../../db/payments/processor/protocol';
import { recordRegistration } from '../../db/payments/record-registration';
import type { Services } from '../../services';
import { errors, type ApiError } from '../http/errors';
import type { IdempotencyKey } from '../http/idempotency';
import { createOnce, type BoundObject } from '../idempotency/create-once';
import { checkOfferPurchase } from '../offers/offers';
import { findPurchasableProduct, profileLocale } from './products';
import { paymentView, type PaymentView } from './views';
import { languageOf } from '../../db/accounts/user-locale';

export interface CreatePaymentBody {
  product_id: string;
  method: PaymentMethod;
}

export interface CreatedPayment {
  statusCode: number;
  payment: PaymentView;
}

/** Contract: `409 request_in_progress` lasts at most about 1.5 minutes. */
const inProgressForSeconds = 90;
const maxUnfinishedPayments = 5;

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
    create: (trx, product) => insertPayment(trx, services, userId, product, body.method),
    find: (paymentId) => paymentAsRepeated(db, userId, paymentId),
    twoPhase: {
      inProgressForSeconds,
      call: (paymentId) => registerAtProcessor(services, paymentId),
      close: async (trx, paymentId) => { await closeUnregistered(trx, paymentId); },
    },
  });
  return { statusCode: created.statusCode, payment: created.body };
}

async function insertPayment(trx: Knex.Transaction, services: Services, userId: string, product: ProductRow, method: PaymentMethod): Promise<string> {
  const { config } = services;
  // One creation per user at a time: the counts below must not be read by two requests at once.
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`payments:${userId}`]);
  const offerIssueId = await checkPurchaseRules(trx, userId, product);
  await checkUnfinished(trx, userId);
  if (!config.payments.enabled) throw errors.providerUnavailable('Payments are switched off.');
  const { rows: [row] } = await trx.raw<{ rows: { id: string }[] }>(
    `insert into payments (user_id, product_id, offer_issue_id, amount_minor, currency, credits, method, expires_at, next_check_at)
     values (:userId, :productId, :offerIssueId, :amountMinor, :currency, :credits, :method,
       now() + make_interval(secs => :sessionS), now() + make_interval(secs => :firstCheckS))
     returning id`,
    {
      userId,
      productId: product.id,
      offerIssueId,
      amountMinor: product.price_minor,
      currency: product.currency,
      credits: product.credits,
      method,
      sessionS: SESSION_TIMEOUT_SECS,
      firstCheckS: config.payments.reconcileFirstCheckS,
    },
  );
  return row.id;
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
  return product.offer_only ? checkOfferPurchase(trx, userId, product) : null;
}

/** 429 without Retry-After: a slot frees when a payment becomes terminal or expires, not at a known time. */
async function checkUnfinished(trx: Knex.Transaction, userId: string): Promise<void> {
  const [{ count }] = await trx('payments').where({ user_id: userId, status: 'created' }).count<{ count: number }[]>('* as count');
  if (count >= maxUnfinishedPayments) throw errors.rateLimited();
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

/** Registers the payment's order at the processor and keeps its page; a processor that refuses or is silent is a 503. */
async function registerAtProcessor(services: Services, paymentId: string): Promise<{ answer: PaymentView } | { refusal: ApiError }> {
  const { db, log, config } = services;
  if (!config.payments.enabled) return { refusal: errors.providerUnavailable('Payments are switched off.') };
  const payment = await db('payments').where({ id: paymentId }).first<PaymentRow>('*');
  const product = await db('payment_products').where({ id: payment.product_id }).first<ProductRow>('*');
  const locale = await profileLocale(db, payment.user_id);
  const pagesBase = `${config.publicBaseUrl}/v1/payments/${payment.id}`;
  try {
    const order = await services.paymentProcessor.registerOrder({
      paymentId: payment.id,
      amountMinor: payment.amount_minor,
      currency: CURRENCY_RUB,
      description: languageOf(locale) === 'en' ? product.title_en : product.title_ru,
      locale,
      method: payment.method,
      returnUrl: `${pagesBase}/return`,
      failUrl: `${pagesBase}/fail`,
      // Fiscal receipts are in Russian whatever the page language.
      receipt: { itemName: product.title_ru, quantity: 1, priceMinor: payment.amount_minor },
    });
    const registered = await recordRegistration(db, payment.id, order);
    const current = registered ?? (await db('payments').where({ id: payment.id }).first<PaymentRow>('*'));
    return { answer: paymentView(current, order.paymentUrl) };
  } catch (error) {
    if (!(error instanceof ProcessorUnavailableError || error instanceof ProcessorRejectedError)) throw error;
    log.warn({ paymentId: payment.id, err: error }, 'payments: the processor did not register the order; payment closed');
    return { refusal: errors.providerUnavailable('The payment processor is unavailable, try again later.') };
  }
}
