import type { Knex } from 'knex';
import type { GenerationStatus } from '../../db/generations/model';
import type { Services } from '../../services';
import { reserveAndQueue, type GenerationPlan } from '../../services/generations/reserve-and-queue';
import { findLaunchableEffect, launchableBy } from '../../db/catalog/launchable';
import { Shortfall } from '../../db/credits/ledger';
import { generationRoute } from '../../pool/task-routes';
import { errors, invalidField } from '../http/errors';
import type { IdempotencyKey } from '../idempotency/idempotency-key';
import { isUuid } from '../../common/validation';
import { createOnce } from '../idempotency/create-once';
import { checkUpload, findOwnUploads, maxUploadBytes, type UploadCheck, type UploadRow } from '../uploads/uploads';
import { headerShowsUsablePhoto, PHOTO_HEADER_BYTES } from '../../media/photo-header';
import { assignPhotos, uploadIdsOf, uploadLocations, type AssignedPhoto, type PhotoRequest } from './photos';

export interface CreateGenerationBody extends PhotoRequest {
  effect_id: string;
}

export interface GenerationAccepted {
  id: string;
  status: GenerationStatus;
}

/**
 * A checked request: what it starts (everything the pending row needs but its id and owner), and
 * the check of its photos in storage, which may still run.
 */
export interface CheckedGeneration {
  plan: GenerationPlan;
  /**
   * Rejects with the first photo's refusal (422). It comes before every later refusal (the
   * transaction's 402 and 503 too), so each waits for it, and it is awaited before the insert.
   * Resolves whether each photo's header was read and shows a usable image: the dispatcher then
   * reads none.
   */
  photoHeadersChecked: Promise<boolean>;
}

/**
 * `POST /v1/generations`. Every check runs before any credit moves, in the contract's order:
 * 404 (effect or an upload absent or another's), 422 (upload not completed or above 15 MB), 422
 * (characters rules), 422 `characters_required` (ambiguous flat list), 422 (price not assigned
 * yet), then `startGeneration`'s 402 and 503.
 */
export async function createGeneration(
  services: Services,
  userId: string,
  body: CreateGenerationBody,
  idempotency: IdempotencyKey | null,
): Promise<{ statusCode: number; body: GenerationAccepted }> {
  return startGeneration(services, userId, {
    body,
    idempotency,
    plan: () => planEffectGeneration(services, userId, body),
    answer: (id) => currentStatus(services.db, id),
    // What it is at its creation: no read after the commit.
    answerCreated: (id) => ({ id, status: 'pending' }),
  });
}

/**
 * The creation every kind of generation shares (effect and studio: one pipeline). `plan` runs the
 * kind's checks outside any transaction; then in one transaction the reserve (402), the queue check
 * (503) and the pending generation with its FIFO ticket and its NOTIFY. A refused request leaves the
 * Idempotency-Key free; a repeat of an accepted one (on either endpoint of the pair, same body)
 * answers the same generation, charged once, as `answer` shows it now.
 */
export async function startGeneration<Answer>(
  services: Services,
  userId: string,
  request: {
    body: unknown;
    idempotency: IdempotencyKey | null;
    plan: () => Promise<CheckedGeneration>;
    /** The generation as a repeat of the request shows it now. */
    answer: (generationId: string) => Promise<Answer>;
    /** The answer to the creating request, when it needs no read; `answer`'s otherwise. */
    answerCreated?: (generationId: string) => Answer;
  },
): Promise<{ statusCode: number; body: Answer }> {
  return createOnce({
    db: services.db,
    userId,
    idempotency: request.idempotency,
    body: request.body,
    statusCode: 202,
    prepare: request.plan,
    create: async (trx, { plan, photoHeadersChecked }) => {
      const started = await reserveAndQueue(trx, services, userId, plan, photoHeadersChecked);
      // A photo's refusal comes first, and rolls the reserve back.
      await photoHeadersChecked;
      if (started instanceof Shortfall) throw errors.insufficientCredits(started);
      if (started === 'queue_full') throw errors.providerUnavailable('Too many generations are waiting; try again later.');
      return started;
    },
    find: async (id) => ({ state: 'done', answer: await request.answer(id) }),
    answerCreated: request.answerCreated,
  });
}

/**
 * The photos' own checks, shared by every kind of generation, in the contract's order: every
 * upload exists and is the caller's (404), then each is in storage and within 15 MB (422, at its
 * place in the request). Answers the caller's uploads by id (lowercase), and whether each photo's
 * header shows a usable image (`CheckedGeneration.photoHeadersChecked`).
 */
export async function checkedUploads(
  services: Services,
  userId: string,
  uploadIds: string[],
  placeOf: (uploadId: string) => (string | number)[],
): Promise<{ byId: Map<string, UploadRow>; headersUsable: boolean }> {
  const { byId, stored } = await ownUploads(services, userId, uploadIds, placeOf);
  return { byId, headersUsable: await stored };
}

/**
 * `checkedUploads` in two steps: answers once the uploads are found the caller's (404 otherwise),
 * with the look at their objects in storage begun (`stored`: rejects with the 422 of the first that
 * is not completed or above 15 MB, else resolves whether each one's header shows a usable image).
 * The look reads each photo's first bytes, which tell what a HEAD would and hold its header: the
 * dispatcher need not read them before the submission (`media/photo-header.ts`; one that does not
 * show a usable image is read there again, and refused as `bad_input_image`).
 */
async function ownUploads(
  services: Services,
  userId: string,
  uploadIds: string[],
  placeOf: (uploadId: string) => (string | number)[],
): Promise<{ byId: Map<string, UploadRow>; stored: Promise<boolean> }> {
  const { db, storage } = services;
  if (uploadIds.some((id) => !isUuid(id))) throw errors.notFound('Upload not found.');
  const uploads = await findOwnUploads(db, userId, uploadIds.map((id) => id.toLowerCase()));
  const byId = new Map(uploads.map((upload) => [upload.id, upload]));
  if (uploadIds.some((id) => !byId.has(id.toLowerCase()))) throw errors.notFound('Upload not found.');
  // Each upload is completed: the object its ticket named, within 15 MB (checked here because the
  // embedded S3 does not enforce the POST policy).
  const stored = Promise.all(uploadIds.map((id) => storage.readHead(byId.get(id.toLowerCase())!.object_key, PHOTO_HEADER_BYTES))).then(async (reads) => {
    uploadIds.forEach((id, index) => {
      const problem = uploadProblems[checkUpload(byId.get(id.toLowerCase())!, reads[index]?.object ?? null)];
      if (problem) throw invalidField(placeOf(id), problem.msg, problem.type);
    });
    const usable = await Promise.all(reads.map((read) => headerShowsUsablePhoto(read!.head)));
    return usable.every(Boolean);
  });
  // A caller that stops at an earlier refusal never awaits it.
  stored.catch(() => undefined);
  return { byId, stored };
}

/**
 * The checks of an effect generation that need no transaction, in the contract's order; throws the
 * first refusal. The objects of its photos are still being looked at in storage when it answers:
 * the reserve goes ahead meanwhile (`CheckedGeneration`).
 */
async function planEffectGeneration(services: Services, userId: string, body: CreateGenerationBody): Promise<CheckedGeneration> {
  // 1. The effect and every upload exist and are the caller's. A hidden effect is gone for
  // launching; a private user effect's launches for its author only; one that no provider kind
  // with an account here runs is not offered, and gone for launching as a hidden one.
  // The uploads are read (and their objects looked at) while the effect is: its refusal still
  // comes first, and theirs is dropped then.
  const places = uploadLocations(body);
  const uploads = ownUploads(services, userId, uploadIdsOf(body), (id) => places.get(id)!);
  uploads.catch(() => undefined);
  const effect = await findLaunchableEffect(services.db, body.effect_id);
  if (!launchableBy(effect, userId)) throw errors.notFound('Effect not found.');
  const route = generationRoute(services.config, effect);
  if (!route) throw errors.notFound('Effect not found.');
  // 1. The uploads, absent or another's; 2. (not completed or above 15 MB) goes on in `stored`.
  const { byId, stored } = await uploads;

  let photos: AssignedPhoto[];
  try {
    // 3 and 4. Who is on which photo.
    photos = assignPhotos(effect, body);
    // 8. A template whose price is not assigned yet.
    if (effect.cost <= 0) throw invalidField(['body', 'effect_id'], 'the effect has no price yet; try again in a few seconds', 'cost_not_assigned');
  } catch (error) {
    await stored;
    throw error;
  }

  return {
    plan: {
      kind: 'effect',
      effectId: effect.id,
      studioCategoryId: null,
      prompt: effect.prompt,
      cost: effect.cost,
      outputType: effect.output_type,
      model: effect.model,
      providerKind: route.kind,
      route: route.route,
      inputs: photos.map((photo) => ({ upload_id: photo.upload_id.toLowerCase(), object_key: byId.get(photo.upload_id.toLowerCase())!.object_key, person: photo.person })),
    },
    photoHeadersChecked: stored,
  };
}

const uploadProblems: Record<UploadCheck, { msg: string; type: string } | null> = {
  completed: null,
  pending: { msg: 'the upload is not completed: no file was put into storage', type: 'upload_pending' },
  not_via_its_ticket: { msg: 'the file under this upload was not put there through its upload ticket', type: 'upload_not_via_ticket' },
  wrong_type: { msg: 'the file is not of the content type the upload was created for', type: 'upload_wrong_type' },
  too_large: { msg: `the upload is larger than ${maxUploadBytes / 1024 / 1024} MB`, type: 'upload_too_large' },
};

async function currentStatus(db: Knex, id: string): Promise<GenerationAccepted> {
  const row: { id: string; status: GenerationStatus } | undefined = await db('generations').where({ id }).first('id', 'status');
  if (!row) throw new Error(`generation ${id} bound to an Idempotency-Key does not exist`);
  return { id: row.id, status: row.status };
}
