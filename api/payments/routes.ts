import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../http/validation';
import { createPayment, type CreatePaymentBody } from './create-payment';
import { productProperties, productView, profileLocale, showcase } from './products';
import { refreshPayment } from './refresh';
import { paymentStreamRoute } from './stream';
import { findOwnPayment, paymentView } from './views';
import { languageOf } from '../../db/accounts/user-locale';

const productSchema = schema.object(productProperties, Object.keys(productProperties));

const paymentProperties = {
  id: schema.uuid(),
  status: schema.string({ enum: ['created', 'succeeded', 'failed', 'expired', 'refunded'] }),
  product_id: schema.uuid(),
  amount_minor: schema.integer(),
  currency: schema.integer(),
  credits: schema.integer(),
  method: schema.string({ enum: ['card', 'sbp'] }),
  created_at: schema.string({ format: 'date-time' }),
  paid_at: schema.nullable(schema.string({ format: 'date-time' })),
  receipt_url: schema.nullable(schema.string()),
};
const paymentSchema = schema.object(paymentProperties, Object.keys(paymentProperties));
const createdPaymentSchema = schema.object({ ...paymentProperties, payment_url: schema.string() }, [...Object.keys(paymentProperties), 'payment_url']);

export const paymentRoutes = [
  // Before `/v1/payments/{id}`, which would otherwise take "products" for an id.
  defineRoute<unknown, { locale?: 'ru' | 'en' }>({
    method: 'GET', path: '/v1/payments/products', access: 'token', limits: [readBudget()],
    summary: 'Credit packs in showcase order (offer-only packs never listed). Titles in `locale`, else in the profile locale.',
    query: schema.object({ locale: schema.string({ enum: ['ru', 'en'] }) }),
    responses: {
      200: {
        description: 'All packs; not paged in fact',
        schema: schema.object({ items: schema.array(productSchema), total: schema.integer(), limit: schema.integer(), offset: schema.integer() }),
      },
    },
    handler: async (ctx, { query }) => {
      const { db } = ctx.services;
      const language = query.locale ?? languageOf(await profileLocale(db, caller(ctx).id));
      const items = (await showcase(db)).map((row) => productView(row, language));
      ctx.body = { items, total: items.length, limit: Math.max(100, items.length), offset: 0 };
    },
  }),
  defineRoute<CreatePaymentBody>({
    method: 'POST', path: '/v1/payments', access: 'registered', limits: [writeBudget()],
    summary: 'Creates a payment for a pack and registers the order at the processor (up to ~10 s). Optional Idempotency-Key.',
    idempotent: 'payment',
    body: schema.object({ product_id: schema.uuid(), method: schema.string({ enum: ['card', 'sbp'] }) }, ['product_id', 'method']),
    responses: {
      201: { description: 'Payment with `status: created` and `payment_url`', schema: createdPaymentSchema },
      403: { description: '`registration_required` for a guest; `forbidden` when the pack\'s purchase limit is used up or an offer-only pack is not payable' },
      404: { description: 'Pack absent or switched off' },
      409: { description: '`idempotency_key_reused`, or `request_in_progress` while the first request waits for the processor' },
      429: { description: 'Write rate (with Retry-After) or more than five unfinished payments (without)' },
      503: { description: 'Payments switched off or the processor unreachable; the key stays free' },
    },
    handler: async (ctx, { body, idempotency }) => {
      const created = await createPayment(ctx.services, caller(ctx).id, { product_id: body.product_id.toLowerCase(), method: body.method }, idempotency);
      ctx.status = created.statusCode;
      ctx.body = created.payment;
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'GET', path: '/v1/payments/{id}', access: 'token', limits: [readBudget()],
    summary: 'The caller\'s payment (never with `payment_url`).',
    params: schema.object({ id: schema.uuid() }, ['id']),
    responses: { 200: { description: 'Payment', schema: paymentSchema }, 404: { description: 'Absent or another user\'s payment' } },
    handler: async (ctx, { params }) => {
      const payment = await findOwnPayment(ctx.services.db, caller(ctx).id, params.id);
      if (!payment) throw errors.notFound();
      ctx.body = paymentView(payment);
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'POST', path: '/v1/payments/{id}/refresh', access: 'token', limits: [readBudget()],
    summary: 'The payment with its status refreshed from the processor (asked at most once per few seconds per payment).',
    // Any id that cannot name the caller's payment is `404`, so the path is not checked as a UUID here.
    responses: {
      200: { description: 'Payment', schema: paymentSchema },
      404: { description: 'Absent or another user\'s payment' },
      503: { description: 'Payments switched off' },
    },
    handler: async (ctx, { params }) => {
      ctx.body = await refreshPayment(ctx.services, caller(ctx).id, params.id);
    },
  }),
  paymentStreamRoute,
];
