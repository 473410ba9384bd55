import { hideGeneration } from '../../db/generations/hide-generation';
import { generationStatuses, type GenerationStatus } from '../../db/generations/model';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { pagingProperties, type Paging } from '../http/paging';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema, isUuid } from '../http/validation';
import { cancelGeneration } from './cancel';
import { createGeneration, type CreateGenerationBody } from './create';
import { generationStreamRoute } from './stream';
import { findOwnGeneration, generationDetail, generationDetailSchema, generationList, generationListSchema } from './views';

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
    responses: {
      202: { description: 'Accepted (also the repeat of an accepted request with the same Idempotency-Key)', schema: schema.object({ id: schema.uuid(), status: schema.string() }) },
      402: { description: 'insufficient_credits' },
      404: { description: 'effect or upload absent or another user\'s' },
      409: { description: 'idempotency_key_reused' },
      422: { description: 'validation_error or characters_required' },
      503: { description: 'provider_unavailable: more than MAX_QUEUED_GENERATIONS generations waiting' },
    },
    handler: async (ctx, { body, idempotency }) => {
      const created = await createGeneration(ctx.services, caller(ctx).id, body, idempotency);
      ctx.status = created.statusCode;
      ctx.set('Location', `/v1/generations/${created.body.id}`);
      ctx.body = created.body;
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
    responses: { 200: { description: 'GenerationDetail', schema: generationDetailSchema } },
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
    responses: {
      200: { description: 'The cancelled generation', schema: generationDetailSchema },
      404: { description: 'absent or another user\'s' },
      422: { description: 'validation_error with one detail {loc: ["path", "id"], type: "invalid_status"}: not pending (or being submitted right now)' },
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
