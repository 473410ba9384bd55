import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { pageSchema } from '../http/paging';
import { schema } from '../../common/validation';
import { createPayment, type CreatePaymentBody } from './create-payment';
import { productSchema, productView, profileLocale, showcase } from './products';
import { refreshPayment } from './refresh';
import { paymentStatusSchema, paymentStreamRoute } from './stream';
import { findOwnPayment, paymentView } from './views';
import { languageOf } from '../../common/language';

const paymentProperties = {
  id: schema.uuid(),
  status: paymentStatusSchema,
  product_id: schema.uuid(),
  amount_minor: schema.integer(),
  currency: schema.integer(),
  credits: schema.integer(),
  method: schema.string({ enum: ['card', 'sbp'] }),
  created_at: schema.string({ format: 'date-time' }),
  paid_at: schema.nullable(schema.string({ format: 'date-time' })),
  receipt_url: schema.nullable(schema.string()),
};
const paymentSchema = schema.response(paymentProperties, { title: 'Payment' });
const createdPaymentSchema = schema.response({ ...paymentProperties, payment_url: schema.string() }, { title: 'CreatedPayment' });

const paymentExample = {
  id: '2b7e4f1a-9c3d-4e5f-8a6b-7c8d9e0f1a2b',
  status: 'created',
  product_id: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a',
  amount_minor: 59900,
  currency: 643,
  credits: 500,
  method: 'card',
  created_at: '2026-11-23T12:00:00.000Z',
  paid_at: null,
  receipt_url: null,
};

export const paymentRoutes = [
  // Before `/v1/payments/{id}`, which would otherwise take "products" for an id.
  defineRoute<unknown, { locale?: 'ru' | 'en' }>({
    method: 'GET', path: '/v1/payments/products', access: 'token', limits: [readBudget()],
    summary: 'Credit packs in showcase order (offer-only packs never listed). Titles in `locale`, else in the profile locale.',
    query: schema.object({ locale: schema.string({ enum: ['ru', 'en'] }) }),
    responses: {
      200: {
        description: 'All packs; not paged in fact',
        schema: pageSchema(productSchema, 'ProductPage'),
        example: {
          items: [{ id: paymentExample.product_id, code: 'pack_500', title: '500 credits', price_minor: 59900, credits: 500, badge: 'popular' }],
          total: 1,
          limit: 100,
          offset: 0,
        },
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
    bodyExample: { product_id: paymentExample.product_id, method: 'card' },
    responses: {
      201: {
        description: 'Payment with `status: created` and `payment_url`, the processor\'s payment page to open in a browser',
        schema: createdPaymentSchema,
        example: { ...paymentExample, payment_url: 'http://127.0.0.1:8080/sim/processor/pay/5f0c8a7e-3b2d-4c1e-9f8a-7b6c5d4e3f2a' },
      },
    },
    errors: {
      forbidden: "The pack's purchase limit per account is used up (paid, refunded and unfinished checkouts count), or it is an offer-only pack whose offer is over, paid or not issued to the caller.",
      not_found: 'The pack is absent or switched off.',
      rate_limited: 'The write rate (with `Retry-After`), or more than five unfinished payments (without: a slot frees when one ends, within 30 minutes).',
      provider_unavailable: 'Payments are switched off, or the processor is unreachable or refused the order (the key stays free).',
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
    responses: { 200: { description: 'Payment', schema: paymentSchema, example: { ...paymentExample, status: 'succeeded', paid_at: '2026-11-23T12:03:10.000Z' } } },
    errors: { not_found: "Absent or another user's payment.", validation_error: 'The id is not a UUID.' },
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
    responses: { 200: { description: 'Payment', schema: paymentSchema } },
    errors: { not_found: "Absent or another user's payment.", provider_unavailable: 'Payments are switched off.' },
    handler: async (ctx, { params }) => {
      ctx.body = await refreshPayment(ctx.services, caller(ctx).id, params.id);
    },
  }),
  paymentStreamRoute,
];
