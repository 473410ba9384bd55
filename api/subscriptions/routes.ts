import { languageOf } from '../../common/language';
import { cancelReasons } from '../../db/subscriptions/model';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { page, pageSchema, pagingProperties, type Paging } from '../http/paging';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { profileLocale } from '../payments/products';
import { cancelOwnSubscription, type CancelBody } from './cancel';
import { createSubscription, type CreateSubscriptionBody } from './create';
import { listedPlans } from './plans';
import { createdSubscriptionSchema, findOwnSubscription, ownSubscriptionsPage, planSchema, planView, subscriptionSchema, subscriptionView } from './views';

const subscriptionAnswer = { description: 'Subscription', schema: subscriptionSchema };
const notFound = "Absent or another user's subscription.";

export const subscriptionRoutes = [
  // Before `/v1/subscriptions/{id}`, which would otherwise take "plans" for an id.
  defineRoute<unknown, { locale?: 'ru' | 'en' }>({
    method: 'GET', path: '/v1/subscriptions/plans', access: 'token', limits: [readBudget()],
    summary: 'Subscription plans in operator order (offer-only plans never listed). Titles in `locale`, else in the profile locale. Open to guests.',
    query: schema.object({ locale: schema.string({ enum: ['ru', 'en'] }) }),
    responses: { 200: { description: 'Array of Plan', schema: schema.array(planSchema) } },
    handler: async (ctx, { query }) => {
      const { db } = ctx.services;
      const language = query.locale ?? languageOf(await profileLocale(db, caller(ctx).id));
      ctx.body = (await listedPlans(db)).map((row) => planView(row, language));
    },
  }),
  defineRoute<unknown, Paging>({
    method: 'GET', path: '/v1/subscriptions', access: 'registered', limits: [readBudget()],
    summary: 'The caller\'s subscriptions, newest first.',
    query: schema.object(pagingProperties),
    responses: { 200: { description: 'Page of Subscription', schema: pageSchema(subscriptionSchema) } },
    handler: async (ctx, { query }) => {
      const { db } = ctx.services;
      const { rows, total } = await ownSubscriptionsPage(db, caller(ctx).id, query);
      ctx.body = page(rows.map((row) => subscriptionView(row)), total, query);
    },
  }),
  defineRoute<CreateSubscriptionBody>({
    method: 'POST', path: '/v1/subscriptions', access: 'registered', limits: [writeBudget()],
    summary: 'Subscribes to a plan: a pending subscription whose first period is registered at the processor with a request to save the card (up to ~10 s). '
      + 'Pay on `payment_url`; follow `payment_id` with GET /v1/payments/{id} or its stream. Optional Idempotency-Key, shared with POST /v1/payments.',
    idempotent: 'payment',
    body: schema.object({
      plan_id: schema.uuid(),
      // Recurring charges need a saved card, so `sbp` is refused.
      method: { ...schema.string({ enum: ['card'] }), default: 'card' },
    }, ['plan_id']),
    bodyExample: { plan_id: '9b2e7c4a-1d3f-4e5a-8b6c-0d7e2f9a4c1b', method: 'card' },
    responses: {
      201: { description: 'Subscription with `status: pending`, `payment_id` (the first payment) and `payment_url`', schema: createdSubscriptionSchema },
    },
    errors: {
      forbidden: 'An offer plan not issued to the caller, or its offer is over or already paid.',
      not_found: 'The plan is absent or switched off.',
      already_subscribed: 'A pending, active or past_due subscription to this plan exists.',
      validation_error: '`plan_id` is not a UUID, `method` is other than `card`, or the Idempotency-Key is badly formatted.',
      rate_limited: 'The write rate (with `Retry-After`), or more than five unfinished payments (without).',
      provider_unavailable: 'Payments are switched off or the processor is unreachable; the key stays free.',
    },
    handler: async (ctx, { body, idempotency }) => {
      const created = await createSubscription(ctx.services, caller(ctx).id, { plan_id: body.plan_id.toLowerCase(), method: body.method }, idempotency);
      ctx.status = created.statusCode;
      ctx.body = created.subscription;
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'GET', path: '/v1/subscriptions/{id}', access: 'registered', limits: [readBudget()],
    summary: 'The caller\'s subscription (never with `payment_url`).',
    responses: { 200: subscriptionAnswer },
    errors: { not_found: notFound },
    handler: async (ctx, { params }) => {
      const subscription = await findOwnSubscription(ctx.services.db, caller(ctx).id, params.id);
      if (!subscription) throw errors.notFound();
      ctx.body = subscriptionView(subscription);
    },
  }),
  defineRoute<CancelBody, unknown, { id: string }>({
    method: 'POST', path: '/v1/subscriptions/{id}/cancel', access: 'registered', limits: [writeBudget()],
    summary: 'Cancels: an active or past_due subscription keeps its plan credits to the period end and is not renewed (`cancel_at_period_end: true`); '
      + 'a pending one ends at once (`expired`). Again on one already set to end: the same record.',
    body: schema.object({
      reason: schema.string({ enum: [...cancelReasons] }),
      comment: schema.string({ maxLength: 1000 }),
    }, ['reason']),
    bodyExample: { reason: cancelReasons[0] },
    responses: { 200: subscriptionAnswer },
    errors: {
      not_found: notFound,
      validation_error: 'Missing or unknown `reason`, `comment` over 1000 characters; or the subscription has ended (`expired`, `revoked`): one detail of type `invalid_status` at `["path", "id"]`.',
    },
    handler: async (ctx, { body, params }) => {
      ctx.body = await cancelOwnSubscription(ctx.services, caller(ctx).id, params.id, body);
    },
  }),
];
