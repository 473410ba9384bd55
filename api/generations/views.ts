import type { Knex } from 'knex';
import { userLocale } from '../../db/accounts/user-locale';
import type { GenerationKind, GenerationRow, GenerationStatus, OutputType, StoredGenerationPreview } from '../../db/generations/model';
import type { Storage } from '../../media/storage';
import { effectExample, effectView, effectSchema, type Effect } from '../catalog/effect-view';
import type { ApiContext } from '../http/context';
import { page, pageSchema, type Page, type Paging } from '../http/paging';
import { schema } from '../../common/validation';
import { queueFiguresOf, type QueueFigures } from './queue';

/** The generation `preview` of the contract, with signed links that live as long as `result_url`. */
export interface GenerationPreviewView {
  thumb: string;
  poster: string | null;
  width: number;
  height: number;
  blurhash: string;
}

export interface GenerationDetail extends QueueFigures {
  id: string;
  kind: GenerationKind;
  status: GenerationStatus;
  effect_id: string | null;
  effect: Effect | null;
  studio_category_id: string | null;
  prompt: string | null;
  result_url: string | null;
  result_text: string | null;
  output_type: OutputType;
  error_code: string | null;
  preview: GenerationPreviewView | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface GenerationListItem {
  id: string;
  kind: GenerationKind;
  status: GenerationStatus;
  effect_id: string | null;
  studio_category_id: string | null;
  output_type: OutputType;
  error_code: string | null;
  preview: GenerationPreviewView | null;
  created_at: string;
  finished_at: string | null;
}

const previewSchema = schema.nullable(schema.response({
  thumb: schema.string(),
  poster: schema.nullable(schema.string()),
  width: schema.integer(),
  height: schema.integer(),
  blurhash: schema.string(),
}, { title: 'GenerationPreview' }));
const timestamp = schema.string({ format: 'date-time' });
export const generationStatusSchema = schema.string({ enum: ['pending', 'processing', 'succeeded', 'failed'] });
const kindProperty = schema.string({ enum: ['effect', 'studio'] });
const outputTypeProperty = schema.string({ enum: ['image', 'video', 'text'] });

export const generationDetailSchema = schema.response({
  id: schema.uuid(),
  kind: kindProperty,
  status: generationStatusSchema,
  effect_id: schema.nullable(schema.uuid()),
  effect: schema.nullable(effectSchema),
  studio_category_id: schema.nullable(schema.uuid()),
  prompt: schema.nullable(schema.string()),
  result_url: schema.nullable(schema.string()),
  result_text: schema.nullable(schema.string({ maxLength: 1000 })),
  output_type: outputTypeProperty,
  error_code: schema.nullable(schema.string()),
  preview: previewSchema,
  queue_position: schema.nullable(schema.integer({ minimum: 1 })),
  estimated_wait_s: schema.nullable(schema.integer({ minimum: 0 })),
  created_at: timestamp,
  started_at: schema.nullable(timestamp),
  finished_at: schema.nullable(timestamp),
}, { title: 'Generation' });

export const generationListSchema = pageSchema(schema.response({
  id: schema.uuid(),
  kind: kindProperty,
  status: generationStatusSchema,
  effect_id: schema.nullable(schema.uuid()),
  studio_category_id: schema.nullable(schema.uuid()),
  output_type: outputTypeProperty,
  error_code: schema.nullable(schema.string()),
  preview: previewSchema,
  created_at: timestamp,
  finished_at: schema.nullable(timestamp),
}, { title: 'GenerationListItem' }), 'GenerationPage');

export const generationExample: GenerationDetail = {
  id: '6a0f9e8d-7c6b-4a5f-8e3d-2c1b0a9f8e7d',
  kind: 'effect',
  status: 'succeeded',
  effect_id: effectExample.id,
  effect: effectExample,
  studio_category_id: null,
  prompt: null,
  result_url: 'http://127.0.0.1:8080/media/results/3f1c2a9e-8b7d-4e51-9a0c-6d2f4b8e1a73/6a0f9e8d-7c6b-4a5f-8e3d-2c1b0a9f8e7d.png?X-Amz-Expires=3600&X-Amz-Signature=4f6c1d0e',
  result_text: null,
  output_type: 'image',
  error_code: null,
  preview: {
    thumb: 'http://127.0.0.1:8080/media/previews/3f1c2a9e-8b7d-4e51-9a0c-6d2f4b8e1a73/6a0f9e8d-7c6b-4a5f-8e3d-2c1b0a9f8e7d.webp?X-Amz-Expires=3600&X-Amz-Signature=9a8b7c6d',
    poster: null,
    width: 1024,
    height: 1280,
    blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj',
  },
  queue_position: null,
  estimated_wait_s: null,
  created_at: '2026-11-23T12:00:00.000Z',
  started_at: '2026-11-23T12:00:01.250Z',
  finished_at: '2026-11-23T12:00:09.800Z',
};

const iso = (value: Date | null) => (value ? value.toISOString() : null);

/**
 * Signed links to the preview copies. The contract shows a preview only on a succeeded generation:
 * the copy is made before the status becomes `succeeded`.
 */
async function previewView(storage: Storage, row: GenerationRow, ttlS: number): Promise<GenerationPreviewView | null> {
  const stored: StoredGenerationPreview | null = row.preview;
  if (row.status !== 'succeeded' || !stored) return null;
  const thumb = await storage.presignedGet(stored.thumb_key, ttlS);
  const poster = stored.poster_key === null ? null : stored.poster_key === stored.thumb_key ? thumb : await storage.presignedGet(stored.poster_key, ttlS);
  return { thumb, poster, width: stored.width, height: stored.height, blurhash: stored.blurhash };
}

/** The answer to a generation's creation (effect or studio): its status code (`202`, or the repeat's), its Location, its body. */
export function answerCreatedGeneration(ctx: ApiContext, created: { statusCode: number; body: { id: string } }): void {
  ctx.status = created.statusCode;
  ctx.set('Location', `/v1/generations/${created.body.id}`);
  ctx.body = created.body;
}

/** The caller's generation (hidden ones too: hiding is about the list), or null when absent or another's. */
export async function findOwnGeneration(db: Knex, userId: string, id: string): Promise<GenerationRow | null> {
  const row: GenerationRow | undefined = await db('generations').where({ id, user_id: userId }).first();
  return row ?? null;
}

export async function generationDetail(db: Knex, storage: Storage, row: GenerationRow, ttlS: number): Promise<GenerationDetail> {
  const effectId = row.effect_id;
  const [effect, preview, resultUrl, queue] = await Promise.all([
    effectId === null ? null : userLocale(db, row.user_id).then((locale) => effectView(db, storage, effectId, locale === 'en' ? 'en' : 'ru')),
    previewView(storage, row, ttlS),
    row.status === 'succeeded' && row.result_key ? storage.presignedGet(row.result_key, ttlS) : null,
    queueFiguresOf(db, row),
  ]);
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    effect_id: row.effect_id,
    effect,
    studio_category_id: row.studio_category_id,
    prompt: row.prompt,
    result_url: resultUrl,
    result_text: row.status === 'succeeded' ? row.result_text : null,
    output_type: row.output_type,
    error_code: row.error_code,
    preview,
    ...queue,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
  };
}

/** The caller's generations, newest first, hidden ones left out. */
export async function generationList(
  db: Knex,
  storage: Storage,
  userId: string,
  filter: Paging & { status?: GenerationStatus },
  ttlS: number,
): Promise<Page<GenerationListItem>> {
  const visible = () => {
    const query = db('generations').where({ user_id: userId }).whereNull('hidden_at');
    return filter.status ? query.andWhere({ status: filter.status }) : query;
  };
  const [rows, [{ total }]] = await Promise.all([
    visible().orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(filter.limit).offset(filter.offset).select<GenerationRow[]>('*'),
    visible().count<{ total: number }[]>('* as total'),
  ]);
  const items = await Promise.all(rows.map(async (row) => ({
    id: row.id,
    kind: row.kind,
    status: row.status,
    effect_id: row.effect_id,
    studio_category_id: row.studio_category_id,
    output_type: row.output_type,
    error_code: row.error_code,
    preview: await previewView(storage, row, ttlS),
    created_at: row.created_at.toISOString(),
    finished_at: iso(row.finished_at),
  })));
  return page(items, total, filter);
}
