import type { Knex } from 'knex';
import type { Language } from '../../common/language';
import type { PlanPeriod, PlanRow, SubscriptionRow, SubscriptionStatus } from '../../db/subscriptions/model';
import { isUuid, schema } from '../../common/validation';
import { productProperties } from '../payments/products';
import type { Paging } from '../http/paging';

/** A plan (docs/mobile.md, "Subscriptions"): what `GET /v1/subscriptions/plans` lists. */
export interface PlanView {
  id: string;
  code: string;
  title: string;
  description: string;
  period: PlanPeriod;
  price_minor: number;
  currency: number;
  credits: number;
  badge: string | null;
}

/** A subscription (docs/mobile.md, "Subscriptions"); `payment_url` only in the answer to `POST /v1/subscriptions`. */
export interface SubscriptionView {
  id: string;
  plan_id: string;
  plan_code: string;
  status: SubscriptionStatus;
  current_period_start: string | null;
  current_period_end: string | null;
  cancel_at_period_end: boolean;
  canceled_at: string | null;
  cancel_reason: string | null;
  renewal_price_minor: number;
  currency: number;
  payment_id: string | null;
  created_at: string;
  payment_url?: string;
}

export function planView(row: PlanRow, language: Language): PlanView {
  return {
    id: row.id,
    code: row.code,
    title: language === 'en' ? row.title_en : row.title_ru,
    description: language === 'en' ? row.description_en : row.description_ru,
    period: row.period,
    price_minor: row.price_minor,
    currency: row.currency,
    credits: row.credits,
    badge: row.badge,
  };
}

/** A subscription row with the code of its plan. */
export type SubscriptionWithPlan = SubscriptionRow & { plan_code: string };

export function subscriptionView(row: SubscriptionWithPlan, paymentUrl?: string): SubscriptionView {
  return {
    id: row.id,
    plan_id: row.plan_id,
    plan_code: row.plan_code,
    status: row.status,
    current_period_start: row.current_period_start?.toISOString() ?? null,
    current_period_end: row.current_period_end?.toISOString() ?? null,
    cancel_at_period_end: row.cancel_at_period_end,
    canceled_at: row.canceled_at?.toISOString() ?? null,
    cancel_reason: row.cancel_reason,
    renewal_price_minor: row.renewal_price_minor,
    currency: row.currency,
    payment_id: row.payment_id,
    created_at: row.created_at.toISOString(),
    ...(paymentUrl === undefined ? {} : { payment_url: paymentUrl }),
  };
}

/** The caller's subscriptions with their plan codes. */
function ownSubscriptions(db: Knex, userId: string): Knex.QueryBuilder {
  return db('subscriptions as s')
    .join('subscription_plans as p', 'p.id', 's.plan_id')
    .where('s.user_id', userId)
    .select('s.*', 'p.code as plan_code');
}

/** A page of the caller's subscriptions, newest first, and how many there are. */
export async function ownSubscriptionsPage(db: Knex, userId: string, paging: Paging): Promise<{ rows: SubscriptionWithPlan[]; total: number }> {
  const [rows, [{ total }]] = await Promise.all([
    ownSubscriptions(db, userId).orderBy([{ column: 's.created_at', order: 'desc' }, { column: 's.id', order: 'desc' }]).limit(paging.limit).offset(paging.offset),
    db('subscriptions').where({ user_id: userId }).count<{ total: number }[]>('* as total'),
  ]);
  return { rows, total: Number(total) };
}

/** The caller's own subscription; null for an absent one, another user's, or an id that is no UUID. */
export async function findOwnSubscription(db: Knex, userId: string, subscriptionId: string): Promise<SubscriptionWithPlan | null> {
  if (!isUuid(subscriptionId)) return null;
  const row = await ownSubscriptions(db, userId).where('s.id', subscriptionId).first();
  return row ?? null;
}

const periodSchema = schema.string({ enum: ['week', 'month', 'year'] });

export const planSchema = schema.object({
  id: schema.uuid(),
  code: schema.string(),
  title: schema.string(),
  description: schema.string(),
  period: periodSchema,
  price_minor: schema.integer(),
  currency: schema.integer(),
  credits: schema.integer(),
  badge: schema.nullable(schema.string()),
}, ['id', 'code', 'title', 'description', 'period', 'price_minor', 'currency', 'credits', 'badge']);

const subscriptionProperties = {
  id: schema.uuid(),
  plan_id: schema.uuid(),
  plan_code: schema.string(),
  status: schema.string({ enum: ['pending', 'active', 'past_due', 'expired', 'revoked'] }),
  current_period_start: schema.nullable(schema.string({ format: 'date-time' })),
  current_period_end: schema.nullable(schema.string({ format: 'date-time' })),
  cancel_at_period_end: schema.boolean(),
  canceled_at: schema.nullable(schema.string({ format: 'date-time' })),
  cancel_reason: schema.nullable(schema.string()),
  renewal_price_minor: schema.integer(),
  currency: schema.integer(),
  payment_id: schema.nullable(schema.uuid()),
  created_at: schema.string({ format: 'date-time' }),
};
export const subscriptionSchema = schema.object(subscriptionProperties, Object.keys(subscriptionProperties));
export const createdSubscriptionSchema = schema.object(
  { ...subscriptionProperties, payment_url: schema.string() },
  [...Object.keys(subscriptionProperties), 'payment_url'],
);

/** The product of an offer that sells a plan: a pack's fields, `kind: "plan"`, the period and the later price. */
const planOfferProductProperties = { ...productProperties, kind: schema.string({ enum: ['plan'] }), period: periodSchema, renewal_price_minor: schema.integer() };
export const planOfferProductSchema = schema.response(planOfferProductProperties, { title: 'PlanOfferProduct' });
