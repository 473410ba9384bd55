import { hideGeneration } from '../../db/generations/hide-generation';
import { generationStatuses, type GenerationStatus } from '../../db/generations/model';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { pagingProperties, type Paging } from '../http/paging';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema, isUuid } from '../../common/validation';
import { cancelGeneration } from './cancel';
import { createGeneration, type CreateGenerationBody } from './create';
import { generationStreamRoute } from './stream';
import { answerCreatedGeneration, findOwnGeneration, generationDetail, generationDetailSchema, generationExample, generationList, generationListSchema, generationStatusSchema } from './views';

const uploadId = schema.string({ minLength: 1, maxLength: 64 });

export const generationRoutes = [
  defineRoute<CreateGenerationBody>({
    method: 'POST', path: '/v1/generations', access: 'token', limits: [writeBudget()],
    summary: 'Starts a generation: checks the photos, reserves the cost and queues the work; 202 with the pending generation.',
    idempotent: 'generation',
    body: schema.object({
      effect_id: schema.string({ minLength: 1, maxLength: 200 }),
      characters: schema.array(schema.array(uploadId, { maxItems: 4 }), { maxItems: 4 }),
      upload_id: uploadId,
      additional_uploads: schema.array(uploadId, { maxItems: 15 }),
    }, ['effect_id']),
    bodyExample: { effect_id: '0b6f3a52-7c1e-4d8a-9f20-5e4b3c2a1d09', characters: [['8e2d4c6a-1b3f-4a5e-9c7d-0f1e2d3c4b5a']] },
    responses: {
      202: {
        description: 'Accepted, `pending` (also the repeat of an accepted request with the same Idempotency-Key, in its current status); `Location` names the generation',
        schema: schema.response({ id: schema.uuid(), status: generationStatusSchema }, { title: 'GenerationAccepted' }),
        example: { id: generationExample.id, status: 'pending' },
      },
    },
    errors: {
      not_found: "The effect or an upload is absent or another user's.",
      validation_error: 'Invalid body; or an upload is not completed or above 15 MB; or the photos do not fit the effect: more people than it takes, too few or too many photos for a person (`min_photos`, `max_photos`), the same upload twice, more photos than its model takes, no photo, `characters` together with `upload_id`.',
      characters_required: 'A flat photo list (`upload_id`, `additional_uploads`) for an effect whose photos cannot be told apart by person: send `characters`.',
      insufficient_credits: 'The balance is below the effect\'s cost; nothing is charged.',
      provider_unavailable: 'The queue is over its extreme limit (a saturated pool otherwise just queues).',
    },
    handler: async (ctx, { body, idempotency }) => {
      answerCreatedGeneration(ctx, await createGeneration(ctx.services, caller(ctx).id, body, idempotency));
    },
  }),
  defineRoute<unknown, Paging & { status?: GenerationStatus }>({
    method: 'GET', path: '/v1/generations', access: 'token', limits: [readBudget()],
    summary: 'The caller\'s generations, newest first; hidden ones are left out.',
    query: schema.object({ ...pagingProperties, status: schema.string({ enum: generationStatuses }) }),
    responses: { 200: { description: 'Page of generations', schema: generationListSchema } },
    handler: async (ctx, { query }) => {
      const { db, storage, config } = ctx.services;
      ctx.body = await generationList(db, storage, caller(ctx).id, query, config.generations.resultUrlTtlS);
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'GET', path: '/v1/generations/{id}', access: 'token', limits: [readBudget()],
    summary: 'A generation with its effect (or studio category and prompt), signed result and preview links (about an hour) or text answer, and while pending its queue_position and estimated_wait_s.',
    responses: { 200: { description: 'GenerationDetail', schema: generationDetailSchema, example: generationExample } },
    errors: { not_found: "Absent or another user's generation." },
    handler: async (ctx, { params }) => {
      const { db, storage, config } = ctx.services;
      const row = isUuid(params.id) ? await findOwnGeneration(db, caller(ctx).id, params.id.toLowerCase()) : null;
      if (!row) throw errors.notFound('Generation not found.');
      ctx.body = await generationDetail(db, storage, row, config.generations.resultUrlTtlS);
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    // The contract's write budget names creations only; reads and hiding share the /generations budget.
    method: 'POST', path: '/v1/generations/{id}/hide', access: 'token', limits: [readBudget()],
    summary: 'Soft delete: the generation leaves the list, its history stays.',
    responses: { 204: { description: 'Hidden' } },
    errors: { not_found: "Absent or another user's generation." },
    handler: async (ctx, { params }) => {
      if (!isUuid(params.id) || !(await hideGeneration(ctx.services.db, caller(ctx).id, params.id.toLowerCase()))) {
        throw errors.notFound('Generation not found.');
      }
      ctx.status = 204;
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'POST', path: '/v1/generations/{id}/cancel', access: 'token', limits: [readBudget()],
    summary: 'Cancels a pending generation: failed with error_code "canceled", its credits refunded, with the stream event and the push.',
    responses: { 200: { description: 'The cancelled generation', schema: generationDetailSchema } },
    errors: {
      not_found: "Absent or another user's generation.",
      validation_error: 'Not `pending` (or handed to the provider at this very moment): one detail `{loc: ["path", "id"], type: "invalid_status"}`.',
    },
    handler: async (ctx, { params }) => {
      const { services } = ctx;
      if (!isUuid(params.id)) throw errors.notFound('Generation not found.');
      const row = await cancelGeneration(services, caller(ctx).id, params.id.toLowerCase());
      ctx.body = await generationDetail(services.db, services.storage, row, services.config.generations.resultUrlTtlS);
    },
  }),
  generationStreamRoute,
];
