import type { EarningRow, UserEffectRow } from '../../db/user-effects/model';
import { publicUrlOf } from '../catalog/effect-view';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { ownRowsNewestFirst, page, pageSchema, pagingProperties, type Paging } from '../http/paging';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { publish, removeOwn, unpublish } from './moves';
import { userEffectStreamRoute } from './stream';
import { submitUserEffect, type SubmitBody } from './submit';
import { accountSchema, authorAccount, earningSchema, earningView, findOwnUserEffect, userEffectSchema, userEffectView } from './views';

/**
 * The marketplace of user effects (docs/mobile.md, "The marketplace of user effects"): registered accounts only (a guest gets
 * `403 registration_required` on every path); reads share the per-user read budget, the writes
 * (submit, publish, unpublish, delete) the write limit.
 */
const userEffectAnswer = { description: 'UserEffect', schema: userEffectSchema };
const notFound = 'Absent or another user\'s user effect.';
const submissionLimits = 'The write limit, a cooldown after a rejection (600 s) or a lock after 3 rejections within 24 h (each with `Retry-After`); '
  + 'or 3 already waiting for moderation (without `Retry-After`: a place frees when one is moderated).';

const character = schema.object({
  min_photos: schema.integer({ minimum: 0, maximum: 4 }),
  max_photos: schema.integer({ minimum: 1, maximum: 4 }),
}, ['min_photos', 'max_photos']);

export const userEffectRoutes = [
  defineRoute<unknown, Paging>({
    method: 'GET', path: '/v1/user-effects', access: 'registered', limits: [readBudget()],
    summary: 'The caller\'s user effects, newest first, in every status.',
    query: schema.object(pagingProperties),
    responses: { 200: { description: 'Page of UserEffect', schema: pageSchema(userEffectSchema) } },
    handler: async (ctx, { query }) => {
      const { db, storage } = ctx.services;
      const { rows, total } = await ownRowsNewestFirst<UserEffectRow>(db, 'user_effects', caller(ctx).id, query);
      ctx.body = page(rows.map((row) => userEffectView(row, publicUrlOf(storage))), total, query);
    },
  }),
  defineRoute<SubmitBody>({
    method: 'POST', path: '/v1/user-effects', access: 'registered', limits: [writeBudget()],
    summary: 'Submits a user effect built from a prompt and a sample photo: `202` in `processing` while moderation runs (follow it with the stream). '
      + 'The cost of a generation with it is the server\'s: 10 for an image, 40 for a video.',
    body: schema.object({
      name: schema.string({ minLength: 1, maxLength: 120 }),
      description: schema.string({ maxLength: 1000 }),
      prompt: schema.string({ minLength: 1, maxLength: 2000 }),
      output_type: schema.string({ enum: ['image', 'video'] }),
      characters: schema.array(character, { minItems: 1, maxItems: 4 }),
      sample_upload_id: schema.string({ maxLength: 64 }),
      visibility: schema.string({ enum: ['public', 'private'] }),
    }, ['name', 'prompt', 'output_type', 'sample_upload_id']),
    bodyExample: { name: 'Neon portrait', description: 'City lights on the face', prompt: 'a portrait lit by pink and blue neon signs at night', output_type: 'image', sample_upload_id: '3f1c9a2e-7b4d-4e8a-9c6f-1d2e3a4b5c6d', visibility: 'public' },
    responses: { 202: { description: 'UserEffect in `processing`', schema: userEffectSchema } },
    errors: {
      not_found: 'The sample upload is absent or another user\'s.',
      validation_error: 'The body is invalid; the first person is not required or `min_photos > max_photos`; the sample upload is not completed or above 15 MB.',
      rate_limited: submissionLimits,
    },
    handler: async (ctx, { body }) => {
      const created = await submitUserEffect(ctx.services, caller(ctx).id, body);
      ctx.status = 202;
      ctx.body = userEffectView(created, publicUrlOf(ctx.services.storage));
    },
  }),
  // Before `/v1/user-effects/{id}`, which would otherwise take "account" and "earnings" for ids.
  defineRoute({
    method: 'GET', path: '/v1/user-effects/account', access: 'registered', limits: [readBudget()],
    summary: 'The author\'s account: user effects in all and approved, settled earnings (`earned_total`), pending ones (`pending`) and when the next settles.',
    responses: { 200: { description: 'Author account', schema: accountSchema } },
    handler: async (ctx) => {
      ctx.body = await authorAccount(ctx.services.db, caller(ctx).id);
    },
  }),
  defineRoute<unknown, Paging>({
    method: 'GET', path: '/v1/user-effects/earnings', access: 'registered', limits: [readBudget()],
    summary: 'The author\'s earnings, newest first: `pending` until `settles_at`, then `settled` (an `effect_earned` credit row), or `reversed` by an operator\'s removal.',
    query: schema.object(pagingProperties),
    responses: { 200: { description: 'Page of Earning', schema: pageSchema(earningSchema) } },
    handler: async (ctx, { query }) => {
      const { rows, total } = await ownRowsNewestFirst<EarningRow>(ctx.services.db, 'user_effect_earnings', caller(ctx).id, query);
      ctx.body = page(rows.map((row) => earningView(row)), total, query);
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'GET', path: '/v1/user-effects/{id}', access: 'registered', limits: [readBudget()],
    summary: 'The caller\'s user effect.',
    responses: { 200: userEffectAnswer },
    errors: { not_found: notFound },
    handler: async (ctx, { params }) => {
      const own = await findOwnUserEffect(ctx.services.db, caller(ctx).id, params.id);
      if (!own) throw errors.notFound('User effect not found.');
      ctx.body = userEffectView(own, publicUrlOf(ctx.services.storage));
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'DELETE', path: '/v1/user-effects/{id}', access: 'registered', limits: [writeBudget()],
    summary: 'The author removes a user effect (any status but archived): `archived`, gone from the catalog; told by the stream only, no push.',
    responses: { 204: { description: 'Archived' } },
    errors: { not_found: notFound, validation_error: 'Archived already: one detail of type `invalid_status` at `["path", "id"]`.' },
    handler: async (ctx, { params }) => {
      await removeOwn(ctx.services, caller(ctx).id, params.id);
      ctx.status = 204;
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'POST', path: '/v1/user-effects/{id}/publish', access: 'registered', limits: [writeBudget()],
    summary: 'Sends a `private` user effect to the catalog: `processing` (moderated again), then `approved` or `rejected`.',
    responses: { 200: userEffectAnswer },
    errors: { not_found: notFound, validation_error: 'Not `private`: one detail of type `invalid_status` at `["path", "id"]`.', rate_limited: submissionLimits },
    handler: async (ctx, { params }) => {
      ctx.body = userEffectView(await publish(ctx.services, caller(ctx).id, params.id), publicUrlOf(ctx.services.storage));
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'POST', path: '/v1/user-effects/{id}/unpublish', access: 'registered', limits: [writeBudget()],
    summary: 'Takes an `approved` user effect out of the catalog: `private`, its author\'s only.',
    responses: { 200: userEffectAnswer },
    errors: { not_found: notFound, validation_error: 'Not `approved`: one detail of type `invalid_status` at `["path", "id"]`.' },
    handler: async (ctx, { params }) => {
      ctx.body = userEffectView(await unpublish(ctx.services, caller(ctx).id, params.id), publicUrlOf(ctx.services.storage));
    },
  }),
  userEffectStreamRoute,
];
