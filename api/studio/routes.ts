import { localeProperty, type Locale } from '../catalog/locale';
import { answerCreatedGeneration, generationDetailSchema } from '../generations/views';
import { caller } from '../http/authentication';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { offeredKinds } from '../../pool/model-routes';
import { listStudioCategories, studioCategorySchema } from './categories';
import { createStudioGeneration, estimateStudioGeneration, maxPromptLength, type StudioEstimateBody, type StudioGenerationBody } from './studio-generations';

const categoryId = schema.string({ minLength: 1, maxLength: 200 });
const prompt = schema.string({ minLength: 1, maxLength: maxPromptLength });
// A studio task takes at most 4 photos (studio_categories.max_photos).
const uploadIds = schema.array(schema.string({ minLength: 1, maxLength: 64 }), { maxItems: 4 });

/** The studio (docs/mobile.md, "Studio, voice input, queue position and cancel"): task-based generations through the same pipeline as effects. */
export const studioRoutes = [
  defineRoute<unknown, { locale: Locale }>({
    method: 'GET', path: '/v1/studio/categories', access: 'token',
    summary: 'Enabled studio categories (tasks) in the operator order, localized; guests allowed.',
    query: schema.object({ locale: localeProperty }),
    responses: { 200: { description: 'Array of StudioCategory', schema: schema.array(studioCategorySchema) } },
    handler: async (ctx, { query }) => {
      ctx.body = await listStudioCategories(ctx.services.db, query.locale, offeredKinds(ctx.services.config.generations));
    },
  }),
  defineRoute<StudioEstimateBody>({
    method: 'POST', path: '/v1/studio/estimate', access: 'token', limits: [readBudget()],
    summary: 'What a studio generation would cost now, whether the balance covers it, and its place in line; no side effects. Guests allowed.',
    body: schema.object({ category_id: categoryId, prompt, upload_ids: uploadIds }, ['category_id']),
    responses: {
      200: {
        description: 'Estimate',
        schema: schema.response({
          cost: schema.integer(),
          balance: schema.integer(),
          enough: schema.boolean(),
          queue_position: schema.integer({ minimum: 1 }),
          estimated_wait_s: schema.integer({ minimum: 0 }),
        }, { title: 'StudioEstimate' }),
      },
    },
    errors: {
      not_found: "The studio category (absent or switched off) or an upload (absent or another user's).",
      validation_error: 'Invalid body; or photos are named but not usable (not completed, above 15 MB), or too many or too few for the task.',
    },
    handler: async (ctx, { body }) => {
      ctx.body = await estimateStudioGeneration(ctx.services, caller(ctx).id, body);
    },
  }),
  defineRoute<StudioGenerationBody>({
    method: 'POST', path: '/v1/studio/generations', access: 'registered', limits: [writeBudget()],
    summary: 'Starts a studio generation (kind "studio"): the same checks, reserve, queue and pipeline as an effect generation; 202 with the Generation.',
    idempotent: 'generation',
    body: schema.object({ category_id: categoryId, prompt, upload_ids: uploadIds }, ['category_id', 'prompt']),
    bodyExample: { category_id: 'text-to-image', prompt: 'A red fox in a snowy forest, watercolor' },
    responses: {
      202: { description: 'Accepted: the Generation, `pending` (also the repeat of an accepted request with the same Idempotency-Key, in its current state)', schema: generationDetailSchema },
    },
    errors: {
      not_found: "The studio category (absent or switched off) or an upload (absent or another user's).",
      validation_error: "Invalid body (the prompt is 1..10000 characters and not blank); an upload not completed or above 15 MB; a photo count outside the task's `min_photos`..`max_photos`, or the same upload twice.",
      insufficient_credits: "The balance is below the task's cost; nothing is charged.",
      idempotency_key_reused: 'The key came before with another body, or on `POST /v1/generations` (the two share keys).',
      provider_unavailable: 'The queue is over its extreme limit.',
    },
    handler: async (ctx, { body, idempotency }) => {
      answerCreatedGeneration(ctx, await createStudioGeneration(ctx.services, caller(ctx).id, body, idempotency));
    },
  }),
];
