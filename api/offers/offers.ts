import type { Knex } from 'knex';
import type { ProductRow } from '../../db/payments/model';
import type { PlanPeriod, PlanRow } from '../../db/subscriptions/model';
import { errors } from '../http/errors';
import { isUuid } from '../../common/validation';
import { productView, type ProductView } from '../payments/products';
import type { Language } from '../../common/language';
import { planView } from '../subscriptions/views';

/**
 * Special offers (the contract): an issue opens a window fixed at the moment of the issue; a
 * repeat while it lives returns the same issue, so an app restart never extends it. The operator's
 * `offers` table says what is offered (a pack, or a subscription plan with a discounted first
 * period), for how long and how many times per account.
 */

interface IssueRow {
  id: string;
  offer_id: string;
  user_id: string;
  issued_at: Date;
  expires_at: Date;
  dismissed_at: Date | null;
}

interface LiveIssue extends IssueRow {
  code: string;
  seconds_left: number;
  /** The pack sold, or null when the offer sells `plan`. */
  product: ProductRow | null;
  plan: PlanRow | null;
}

/**
 * The offer's `product`: a pack (`kind: "pack"`), or a plan (`kind: "plan"`) with its period and the
 * price charged from the second period on, which the app must show beside the discounted first one.
 */
export type OfferProductView =
  | ProductView & { kind: 'pack' }
  | ProductView & { kind: 'plan'; period: PlanPeriod; renewal_price_minor: number };

export interface OfferView {
  id: string;
  code: string;
  expires_in: number;
  is_dismissed: boolean;
  product: OfferProductView;
}

/** Paid means money arrived once, whatever happened to it later. */
const paidStatuses = ['succeeded', 'refunded'];

/** What an offer sells, a pack or a plan, joined: `sold.enabled` is whether it is on sale. */
function joinSold(query: Knex.QueryBuilder): Knex.QueryBuilder {
  return query
    .leftJoin('payment_products as p', 'p.id', 'o.product_id')
    .leftJoin('subscription_plans as sp', 'sp.id', 'o.plan_id')
    .whereRaw('coalesce(p.enabled, sp.enabled)');
}

/** A payment for what the offer sells (pack or plan), by the issue's user, that was paid. */
function paidFor(db: Knex, paid: Knex.QueryBuilder): Knex.QueryBuilder {
  return paid.select(db.raw('1')).from('payments as pay')
    .whereRaw('pay.user_id = oi.user_id and (pay.product_id = o.product_id or pay.plan_id = o.plan_id)')
    .whereIn('pay.status', paidStatuses);
}

/** The caller's issue whose window is open, whose offer and pack or plan are on, and which is not paid. */
async function liveIssue(db: Knex, userId: string): Promise<LiveIssue | null> {
  const row = await joinSold(db('offer_issues as oi').join('offers as o', 'o.id', 'oi.offer_id'))
    .where('oi.user_id', userId)
    .andWhere('oi.expires_at', '>', db.fn.now())
    .andWhere('o.enabled', true)
    .whereNotExists((paid) => paidFor(db, paid))
    .orderBy('oi.issued_at', 'desc')
    .first(
      'oi.*',
      'o.code',
      db.raw('greatest(0, floor(extract(epoch from oi.expires_at - now())))::integer as seconds_left'),
      db.raw('case when p.id is null then null else row_to_json(p.*) end as product'),
      db.raw('case when sp.id is null then null else row_to_json(sp.*) end as plan'),
    );
  return row ?? null;
}

function offerProductView(issue: LiveIssue, language: Language): OfferProductView {
  if (issue.plan) {
    const { id, code, title, price_minor: priceMinor, credits, badge, period } = planView(issue.plan, language);
    return { id, code, title, price_minor: priceMinor, credits, badge, kind: 'plan', period, renewal_price_minor: issue.plan.renewal_price_minor ?? priceMinor };
  }
  return { ...productView(issue.product!, language), kind: 'pack' };
}

function offerView(issue: LiveIssue, language: Language): OfferView {
  return {
    id: issue.id,
    code: issue.code,
    expires_in: issue.seconds_left,
    is_dismissed: issue.dismissed_at !== null,
    product: offerProductView(issue, language),
  };
}

/** `GET /v1/offers/current`: the live offer, without side effects. */
export async function currentOffer(db: Knex, userId: string, language: Language): Promise<OfferView | null> {
  const issue = await liveIssue(db, userId);
  return issue ? offerView(issue, language) : null;
}

/**
 * `POST /v1/offers/paywall-dismissed`: the live offer, else a new issue of the first enabled offer
 * this account still has issues of, else null. Never to an account with a paid purchase.
 */
export async function offerAfterPaywall(db: Knex, userId: string, language: Language): Promise<OfferView | null> {
  const issued = await db.transaction(async (trx) => {
    // Two taps at once must not open two windows.
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`offers:${userId}`]);
    const live = await liveIssue(trx, userId);
    if (live) return true;
    const paid = await trx('payments').where({ user_id: userId }).whereIn('status', paidStatuses).first('id');
    if (paid) return false;
    const offer = await joinSold(trx('offers as o'))
      .where({ 'o.enabled': true })
      .andWhere('o.max_issues_per_account', '>', trx('offer_issues as oi').count('*').whereRaw('oi.offer_id = o.id').andWhere('oi.user_id', userId))
      .orderBy([{ column: 'o.position' }, { column: 'o.created_at' }])
      .first<{ id: string; window_seconds: number } | undefined>('o.id', 'o.window_seconds');
    if (!offer) return false;
    await trx('offer_issues').insert({
      offer_id: offer.id,
      user_id: userId,
      expires_at: trx.raw('now() + make_interval(secs => ?)', [offer.window_seconds]),
    });
    return true;
  });
  return issued ? currentOffer(db, userId, language) : null;
}

/** `POST /v1/offers/{id}/dismiss`: marks the screen closed; the offer stays payable. */
export async function dismissIssue(db: Knex, userId: string, issueId: string): Promise<void> {
  const issue = isUuid(issueId) ? await db('offer_issues').where({ id: issueId, user_id: userId }).first('id') : undefined;
  if (!issue) throw errors.notFound();
  await db('offer_issues').where({ id: issueId }).whereNull('dismissed_at').update({ dismissed_at: db.fn.now() });
}

/**
 * Before an order for an offer-only pack or plan goes to the processor: it must have been issued to
 * the caller, its window must be open and it must not be paid yet; otherwise `403 forbidden`.
 * Returns the issue the payment is made under.
 */
export async function checkOfferPurchase(trx: Knex.Transaction, userId: string, sold: { productId: string } | { planId: string }): Promise<string> {
  const soldBy = 'productId' in sold ? { column: 'product_id', id: sold.productId } : { column: 'plan_id', id: sold.planId };
  const issue = await trx('offer_issues as oi')
    .join('offers as o', 'o.id', 'oi.offer_id')
    .where({ 'oi.user_id': userId, [`o.${soldBy.column}`]: soldBy.id })
    .orderBy('oi.expires_at', 'desc')
    .first<{ id: string; open: boolean } | undefined>('oi.id', trx.raw('(oi.expires_at > now() and o.enabled) as open'));
  if (!issue) throw errors.forbidden('This offer was not issued to you.');
  if (!issue.open) throw errors.forbidden('This offer is over.');
  const paid = await trx('payments').where({ user_id: userId, [soldBy.column]: soldBy.id }).whereIn('status', paidStatuses).first('id');
  if (paid) throw errors.forbidden('This offer is already paid.');
  return issue.id;
}
