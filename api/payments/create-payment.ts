import type { Knex } from 'knex';
import { errors } from '../http/errors';
import {
  bindKey,
  findBoundKey,
  finishKey,
  reclaimKey,
  releaseKey,
  requestFingerprint,
  type BoundKey,
  type IdempotencyScope,
} from '../http/idempotency';
import { checkOfferPurchase } from '../offers/offers';
import type { Services } from '../../services';
import type { PaymentRow, ProductRow } from '../../db/payments/model';
import { paymentView, type PaymentView } from './payments';
import { ProcessorRejectedError, ProcessorUnavailableError } from '../../db/payments/processor/errors';
import type { PaymentMethod } from '../../db/payments/processor/payment-processor';
import { CURRENCY_RUB, SESSION_TIMEOUT_SECS } from '../../db/payments/processor/protocol';
import { findPurchasableProduct, languageOf, profileLocale } from './products';
import { closeUnregistered } from '../../db/payments/close-unregistered';
import { recordRegistration } from '../../db/payments/record-registration';

export interface CreatePaymentBody {
  product_id: string;
  method: PaymentMethod;
}

export interface CreatedPayment {
  statusCode: number;
  payment: PaymentView;
}

const scope: IdempotencyScope = { pair: 'payment', endpoint: 'POST /v1/payments' };

/** Contract: `409 request_in_progress` lasts at most about 1.5 minutes. */
const inProgressForSeconds = 90;
const maxUnfinishedPayments = 5;

/** Checkouts that hold the pack's purchase limit: paid ones, and open ones that may still be paid. */
const limitStatuses = ['created', 'succeeded', 'refunded'];

/**
 * `POST /v1/payments`. Checks in the contract's order (422 before this; then 404, 403, 429, 503),
 * then two steps: a transaction inserts the payment and binds the key as "in progress", and the
 * processor is called outside it (up to ~10 s), so a repeat meanwhile gets `409 request_in_progress`
 * instead of waiting on a lock. A processor that registered nothing closes the payment and frees
 * the key in one transaction.
 */
export async function createPayment(services: Services, userId: string, body: CreatePaymentBody, key: string | null): Promise<CreatedPayment> {
  const { db } = services;
  const fingerprint = requestFingerprint(scope.endpoint, body);
  if (key) {
    const bound = await findBoundKey(db, userId, scope, key, fingerprint);
    if (bound) {
      const repeated = await answerRepeat(services, userId, key, bound);
      if (repeated) return repeated;
    }
  }

  const product = await findPurchasableProduct(db, body.product_id);
  if (!product) throw errors.notFound('No such pack.');

  const lostRace = Symbol('lost race');
  let payment: PaymentRow;
  try {
    payment = await db.transaction(async (trx) => {
      // One creation per user at a time: the counts below must not be read by two requests at once.
      await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`payments:${userId}`]);
      // A twin with the same key that held the lock before us has bound it by now.
      if (key && (await findBoundKey(trx, userId, scope, key, fingerprint))) throw lostRace;
      const offerIssueId = await checkPurchaseRules(trx, userId, product);
      await checkUnfinished(trx, userId);
      if (!services.config.payments.enabled) throw errors.providerUnavailable('Payments are switched off.');
      const [row] = await trx('payments')
        .insert({
          user_id: userId,
          product_id: product.id,
          offer_issue_id: offerIssueId,
          amount_minor: product.price_minor,
          currency: product.currency,
          credits: product.credits,
          method: body.method,
          expires_at: trx.raw('now() + make_interval(secs => ?)', [SESSION_TIMEOUT_SECS]),
          next_check_at: trx.raw('now() + make_interval(secs => ?)', [services.config.payments.reconcileFirstCheckS]),
        })
        .returning<PaymentRow[]>('*');
      if (key && !(await bindKey(trx, userId, scope, key, fingerprint, { objectId: row.id, statusCode: 201, inProgressForSeconds }))) {
        throw lostRace;
      }
      return row;
    });
  } catch (error) {
    if (error !== lostRace || !key) throw error;
    // Throws `409 request_in_progress` while the twin still waits on the processor.
    const winner = await findBoundKey(db, userId, scope, key, fingerprint);
    const repeated = winner && (await answerRepeat(services, userId, key, winner));
    if (!repeated) throw errors.requestInProgress();
    return repeated;
  }
  return registerAtProcessor(services, payment, key);
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
 * A repeat of a request whose key is bound: the same payment with the same `payment_url` and its
 * current status. A payment left without a page (the first request broke on the server side and its
 * in-progress mark ran out) is opened again: the processor returns the same order for the same
 * order number, so nothing is charged twice. Null when the key must be treated as free.
 */
async function answerRepeat(services: Services, userId: string, key: string, bound: BoundKey): Promise<CreatedPayment | null> {
  const { db } = services;
  const payment = await db('payments').where({ id: bound.objectId, user_id: userId }).first<PaymentRow | undefined>('*');
  if (payment?.payment_url) return { statusCode: bound.statusCode, payment: paymentView(payment, payment.payment_url) };
  if (payment?.status === 'created') {
    if (!(await reclaimKey(db, userId, scope.pair, key, inProgressForSeconds))) throw errors.requestInProgress();
    if (!services.config.payments.enabled) {
      await closeAndRelease(services, payment, key);
      throw errors.providerUnavailable('Payments are switched off.');
    }
    return registerAtProcessor(services, payment, key);
  }
  // Closed before any page was given out (so nobody can have paid it): like a refused request,
  // it leaves the key free, and this request creates a payment of its own.
  await releaseKey(db, userId, scope.pair, key);
  return null;
}

async function registerAtProcessor(services: Services, payment: PaymentRow, key: string | null): Promise<CreatedPayment> {
  const { db, log, config } = services;
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
    if (key) await finishKey(db, payment.user_id, scope.pair, key);
    const current = registered ?? (await db('payments').where({ id: payment.id }).first<PaymentRow>('*'));
    return { statusCode: 201, payment: paymentView(current, order.paymentUrl) };
  } catch (error) {
    if (!(error instanceof ProcessorUnavailableError || error instanceof ProcessorRejectedError)) throw error;
    log.warn({ paymentId: payment.id, err: error }, 'payments: the processor did not register the order; payment closed');
    await closeAndRelease(services, payment, key);
    throw errors.providerUnavailable('The payment processor is unavailable, try again later.');
  }
}

/** Closes a payment that has no order and frees its key, together: never one without the other. */
async function closeAndRelease(services: Services, payment: PaymentRow, key: string | null): Promise<void> {
  await services.db.transaction(async (trx) => {
    await closeUnregistered(trx, payment.id);
    if (key) await releaseKey(trx, payment.user_id, scope.pair, key);
  });
}
