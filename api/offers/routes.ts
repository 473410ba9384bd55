import type { Knex } from 'knex';
import { caller } from '../http/authentication';
import { readBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { productProperties, profileLanguage } from '../payments/products';
import type { ApiContext } from '../http/context';
import { currentOffer, dismissIssue, offerAfterPaywall, type OfferView } from './offers';
import type { Language } from '../../common/language';
import { planOfferProductSchema } from '../subscriptions/views';

const packProductProperties = { ...productProperties, kind: schema.string({ enum: ['pack'] }) };
const packProductSchema = schema.response(packProductProperties, { title: 'PackProduct' });

const offerSchema = schema.nullable(schema.response({
  id: schema.uuid(),
  code: schema.string(),
  expires_in: schema.integer(),
  is_dismissed: schema.boolean(),
  // A pack is paid with POST /v1/payments, a plan (first period discounted) with POST /v1/subscriptions.
  product: { oneOf: [packProductSchema, planOfferProductSchema] },
}, { title: 'Offer' }));

/** "No offer" is a JSON `null` body with 200 (Koa would turn a null body into a 204). */
function answerOffer(ctx: ApiContext, offer: OfferView | null): void {
  ctx.status = 200;
  ctx.type = 'application/json';
  ctx.body = offer === null ? 'null' : offer;
}

/** The caller's live offer, found by `find`, in the language of the profile: a JSON `null` for none. */
function liveOfferRoute(method: 'GET' | 'POST', path: string, summary: string, find: (db: Knex, userId: string, language: Language) => Promise<OfferView | null>) {
  return defineRoute({
    method, path, access: 'registered', limits: [readBudget()],
    summary,
    responses: { 200: { description: 'Offer or null', schema: offerSchema } },
    handler: async (ctx) => {
      const userId = caller(ctx).id;
      const { db } = ctx.services;
      answerOffer(ctx, await find(db, userId, await profileLanguage(db, userId)));
    },
  });
}

export const offerRoutes = [
  liveOfferRoute('POST', '/v1/offers/paywall-dismissed', 'The main paywall was closed: the live special offer, a newly issued one, or null.', offerAfterPaywall),
  liveOfferRoute('GET', '/v1/offers/current', 'The live special offer without side effects, or null.', currentOffer),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'POST', path: '/v1/offers/{id}/dismiss', access: 'registered', limits: [readBudget()],
    summary: 'The offer screen was closed: the offer stays payable and shows `is_dismissed: true`. 204, also on repeat.',
    responses: { 204: { description: 'Dismissed' } },
    errors: { not_found: "Absent or another user's offer issue." },
    handler: async (ctx, { params }) => {
      await dismissIssue(ctx.services.db, caller(ctx).id, params.id);
      ctx.status = 204;
    },
  }),
];
