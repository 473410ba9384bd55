import type { Knex } from 'knex';
import { userLocale } from '../../db/accounts/user-locale';
import type { GenerationRow, GenerationStatus, OutputType, StoredGenerationPreview } from '../../db/generations/model';
import type { Storage } from '../../media/storage';
import { effectView, effectSchema, type Effect } from '../catalog/effect-view';
import { page, pageSchema, type Page, type Paging } from '../http/paging';
import { schema } from '../http/validation';

/** The generation `preview` of contract B, with signed links that live as long as `result_url`. */
export interface GenerationPreviewView {
  thumb: string;
  poster: string | null;
  width: number;
  height: number;
  blurhash: string;
}

export interface GenerationDetail {
  id: string;
  status: GenerationStatus;
  effect: Effect | null;
  result_url: string | null;
  output_type: OutputType;
  error_code: string | null;
  preview: GenerationPreviewView | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface GenerationListItem {
  id: string;
  status: GenerationStatus;
  effect_id: string;
  output_type: OutputType;
  error_code: string | null;
  preview: GenerationPreviewView | null;
  created_at: string;
  finished_at: string | null;
}

const previewSchema = schema.nullable(schema.object({
  thumb: schema.string(),
  poster: schema.nullable(schema.string()),
  width: schema.integer(),
  height: schema.integer(),
  blurhash: schema.string(),
}));
const timestamp = schema.string({ format: 'date-time' });
const statusProperty = schema.string({ enum: ['pending', 'processing', 'succeeded', 'failed'] });

export const generationDetailSchema = schema.object({
  id: schema.uuid(),
  status: statusProperty,
  effect: schema.nullable(effectSchema),
  result_url: schema.nullable(schema.string()),
  output_type: schema.string({ enum: ['image', 'video'] }),
  error_code: schema.nullable(schema.string()),
  preview: previewSchema,
  created_at: timestamp,
  started_at: schema.nullable(timestamp),
  finished_at: schema.nullable(timestamp),
});

export const generationListSchema = pageSchema(schema.object({
  id: schema.uuid(),
  status: statusProperty,
  effect_id: schema.uuid(),
  output_type: schema.string({ enum: ['image', 'video'] }),
  error_code: schema.nullable(schema.string()),
  preview: previewSchema,
  created_at: timestamp,
  finished_at: schema.nullable(timestamp),
}));

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

/** The caller's generation (hidden ones too: hiding is about the list), or null when absent or another's. */
export async function findOwnGeneration(db: Knex, userId: string, id: string): Promise<GenerationRow | null> {
  const row: GenerationRow | undefined = await db('generations').where({ id, user_id: userId }).first();
  return row ?? null;
}

export async function generationDetail(db: Knex, storage: Storage, row: GenerationRow, ttlS: number): Promise<GenerationDetail> {
  const locale = await userLocale(db, row.user_id);
  const [effect, preview, resultUrl] = await Promise.all([
    effectView(db, storage, row.effect_id, locale === 'en' ? 'en' : 'ru'),
    previewView(storage, row, ttlS),
    row.status === 'succeeded' && row.result_key ? storage.presignedGet(row.result_key, ttlS) : null,
  ]);
  return {
    id: row.id,
    status: row.status,
    effect,
    result_url: resultUrl,
    output_type: row.output_type,
    error_code: row.error_code,
    preview,
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
    status: row.status,
    effect_id: row.effect_id,
    output_type: row.output_type,
    error_code: row.error_code,
    preview: await previewView(storage, row, ttlS),
    created_at: row.created_at.toISOString(),
    finished_at: iso(row.finished_at),
  })));
  return page(items, total, filter);
}
