import { debitCoverage } from '../../db/credits/ledger';
import { quantity } from '../../common/plural';
import type { GenerationInput } from '../../db/generations/model';
import type { Services } from '../../services';
import type { GenerationPlan } from '../../services/generations/reserve-and-queue';
import { checkedUploads, startGeneration, type CheckedGeneration } from '../generations/create';
import { queueFiguresOfNew } from '../generations/queue';
import { findOwnGeneration, generationDetail, type GenerationDetail } from '../generations/views';
import { errors, invalidField } from '../http/errors';
import type { IdempotencyKey } from '../idempotency/idempotency-key';
import { findStudioCategory, type LaunchableStudioCategory } from '../../db/studio/find-studio-category';
import type { ChosenRoute } from '../../pool/model-routes';
import { generationRoute } from '../../pool/task-routes';

/** Contract B, limits: a studio prompt is at most 10000 characters (the route's schema enforces it). */
export const maxPromptLength = 10_000;

export interface StudioGenerationBody {
  category_id: string;
  prompt: string;
  upload_ids?: string[];
}

export type StudioEstimateBody = Partial<StudioGenerationBody> & { category_id: string };

export interface StudioEstimate {
  cost: number;
  balance: number;
  enough: boolean;
  queue_position: number;
  estimated_wait_s: number;
}

/**
 * `POST /v1/studio/generations` (docs/mobile.md, "Studio, voice input, queue position and cancel"): a generation of `kind: "studio"` through the
 * same creation as an effect generation (`startGeneration`: reserve, queue, Idempotency-Key paired
 * with `POST /v1/generations`), after the studio's checks in the contract's order: validation (a
 * blank prompt too), category 404, uploads 404 (then not completed or too large, 422), photo count
 * 422; then 402 and 503. Answers the whole Generation, as `GET /v1/generations/{id}` shows it.
 */
export async function createStudioGeneration(
  services: Services,
  userId: string,
  body: StudioGenerationBody,
  idempotency: IdempotencyKey | null,
): Promise<{ statusCode: number; body: GenerationDetail }> {
  const { db, storage, config } = services;
  return startGeneration(services, userId, {
    body,
    idempotency,
    plan: () => planStudioGeneration(services, userId, body),
    answer: async (id) => generationDetail(db, storage, (await findOwnGeneration(db, userId, id))!, config.generations.resultUrlTtlS),
  });
}

/**
 * `POST /v1/studio/estimate`: what creating it now would cost and whether the balance covers it (the
 * ledger's own rule), and where it would stand in line; nothing is written. The category must exist
 * (404); photos, when named, are checked as creation checks them, so an estimate that passes is one
 * creation would accept up to the credits.
 */
export async function estimateStudioGeneration(services: Services, userId: string, body: StudioEstimateBody): Promise<StudioEstimate> {
  const { db } = services;
  const { category, route } = await launchableCategory(services, body.category_id);
  if (body.upload_ids !== undefined) await studioInputs(services, userId, category, body.upload_ids);
  const [coverage, queue] = await Promise.all([debitCoverage(db, userId, category.cost), queueFiguresOfNew(db, route.kind)]);
  return { cost: category.cost, ...coverage, ...queue };
}

/** Its photos are checked in full here, storage included: `photoHeadersChecked` only says what their headers showed. */
async function planStudioGeneration(services: Services, userId: string, body: StudioGenerationBody): Promise<CheckedGeneration> {
  if (body.prompt.trim() === '') throw invalidField(['body', 'prompt'], 'the prompt must not be blank', 'string_blank');
  const { category, route } = await launchableCategory(services, body.category_id);
  const { inputs, headersUsable } = await studioInputs(services, userId, category, body.upload_ids ?? []);
  const plan: GenerationPlan = {
    kind: 'studio',
    effectId: null,
    studioCategoryId: category.id,
    prompt: body.prompt,
    cost: category.cost,
    outputType: category.output_type,
    model: category.model,
    providerKind: route.kind,
    route: route.route,
    inputs,
  };
  return { plan, photoHeadersChecked: Promise.resolve(headersUsable) };
}

/** An enabled category that a provider kind with an account here runs, and its route; else 404, as for a disabled one. */
async function launchableCategory(services: Services, idOrSlug: string): Promise<{ category: LaunchableStudioCategory; route: ChosenRoute }> {
  const category = await findStudioCategory(services.db, idOrSlug);
  const route = category && generationRoute(services.config, category);
  if (!category || !route) throw errors.notFound('Studio category not found.');
  return { category, route };
}

/**
 * The photos of a studio task: 404 and 422 as for any generation, then the category's photo count
 * (422); and whether each one's header shows a usable image (`checkedUploads`).
 */
async function studioInputs(services: Services, userId: string, category: LaunchableStudioCategory, uploadIds: string[]): Promise<{ inputs: GenerationInput[]; headersUsable: boolean }> {
  const place = (id: string): (string | number)[] => ['body', 'upload_ids', uploadIds.indexOf(id)];
  const { byId: uploads, headersUsable } = await checkedUploads(services, userId, uploadIds, place);
  const unique = [...new Set(uploadIds.map((id) => id.toLowerCase()))];
  if (unique.length < uploadIds.length) {
    const repeated = uploadIds.findIndex((id, index) => uploadIds.findIndex((other) => other.toLowerCase() === id.toLowerCase()) < index);
    throw invalidField(['body', 'upload_ids', repeated], 'the same upload is sent twice', 'duplicate_upload');
  }
  if (unique.length < category.min_photos) {
    throw invalidField(['body', 'upload_ids'], `this task needs at least ${quantity(category.min_photos, 'photo')}`, 'min_photos');
  }
  if (unique.length > category.max_photos) {
    throw invalidField(['body', 'upload_ids'], `this task takes at most ${quantity(category.max_photos, 'photo')}`, 'max_photos');
  }
  return { inputs: unique.map((id) => ({ upload_id: id, object_key: uploads.get(id)!.object_key, person: 0 })), headersUsable };
}
