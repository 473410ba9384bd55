import type { Knex } from 'knex';
import type { Storage } from '../../media/storage';
import { schema, type JsonSchema } from '../../common/validation';
import { computeEveryTime, rememberEach, type CatalogStore } from './catalog-store';
import type { Character, FocusPoint, PreviewColumns, StoredPreview } from '../../db/catalog/model';
import type { Locale } from './locale';

export interface EffectPreviewView extends StoredPreview {
  focus: FocusPoint | null;
  video_focus: FocusPoint | null;
}

/** Turns an object key into the address clients load it from (`storage.publicUrl`). */
export type PublicUrl = (key: string) => string;

/** The Effect of the contract. */
export interface Effect {
  id: string;
  slug: string;
  category_id: string | null;
  category_ids: string[];
  name: string;
  description: string;
  preview_url: string;
  preview_video_url: string | null;
  preview_animation_url: string | null;
  preview: EffectPreviewView | null;
  cost: number;
  characters: Character[];
  max_inputs: number;
  min_inputs: number;
  output_type: 'image' | 'video';
  author_id: string | null;
  author_name: string | null;
  tags: string[];
}

const focusSchema = schema.nullable(schema.response({ x: { type: 'number' }, y: { type: 'number' } }, { title: 'FocusPoint' }));
const url = schema.string();

/** One person an effect takes (Effect and UserEffect `characters`). */
export const characterSchema: JsonSchema = schema.response({ min_photos: schema.integer({ minimum: 0 }), max_photos: schema.integer({ minimum: 1 }) }, { title: 'Character' });

/** The `preview` object of an Effect (contract B), also the preview of a user effect. */
export const effectPreviewSchema: JsonSchema = schema.response({
  thumb: url, card: url, full: url, animation: schema.nullable(url), video: schema.nullable(url),
  width: schema.integer(), height: schema.integer(), blurhash: schema.nullable(schema.string()),
  focus: focusSchema, video_focus: focusSchema,
}, { title: 'EffectPreview' });

export const effectSchema: JsonSchema = schema.response({
  id: schema.uuid(),
  slug: schema.string(),
  category_id: schema.nullable(schema.uuid()),
  category_ids: schema.array(schema.uuid()),
  name: schema.string(),
  description: schema.string(),
  preview_url: url,
  preview_video_url: schema.nullable(url),
  preview_animation_url: schema.nullable(url),
  preview: schema.nullable(effectPreviewSchema),
  cost: schema.integer(),
  characters: schema.array(characterSchema),
  max_inputs: schema.integer(),
  min_inputs: schema.integer(),
  output_type: schema.string({ enum: ['image', 'video'] }),
  author_id: schema.nullable(schema.uuid()),
  author_name: schema.nullable(schema.string()),
  tags: schema.array(schema.string()),
}, { title: 'Effect' });

const demoMedia = 'http://127.0.0.1:8080/media/effects/winter-portrait';

export const effectExample: Effect = {
  id: '0b6f3a52-7c1e-4d8a-9f20-5e4b3c2a1d09',
  slug: 'winter-portrait',
  category_id: '5d2e8f14-3a6b-4c9d-8e7f-1a2b3c4d5e6f',
  category_ids: ['5d2e8f14-3a6b-4c9d-8e7f-1a2b3c4d5e6f'],
  name: 'Winter portrait',
  description: 'A snowy portrait in soft winter light.',
  preview_url: `${demoMedia}/poster.jpg`,
  preview_video_url: null,
  preview_animation_url: null,
  preview: {
    thumb: `${demoMedia}/thumb.webp`, card: `${demoMedia}/card.webp`, full: `${demoMedia}/full.webp`,
    animation: null, video: null, width: 1080, height: 1350, blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj',
    focus: { x: 0.5, y: 0.35 }, video_focus: null,
  },
  cost: 10,
  characters: [{ min_photos: 1, max_photos: 1 }],
  max_inputs: 1,
  min_inputs: 1,
  output_type: 'image',
  author_id: null,
  author_name: null,
  tags: ['winter', 'portrait'],
};

interface EffectRow extends PreviewColumns {
  id: string;
  slug: string;
  name: string;
  description: string;
  cost: number;
  characters: Character[];
  output_type: 'image' | 'video';
  author_id: string | null;
  author_name: string | null;
  category_ids: string[];
  tags: string[];
}

/** A stored preview as clients see it: URLs for keys, and the points to keep in frame. */
export function previewView(preview: StoredPreview, focus: { focus: FocusPoint | null; video_focus: FocusPoint | null }, url: PublicUrl): EffectPreviewView {
  return {
    thumb: url(preview.thumb),
    card: url(preview.card),
    full: url(preview.full),
    animation: preview.animation && url(preview.animation),
    video: preview.video && url(preview.video),
    width: preview.width,
    height: preview.height,
    blurhash: preview.blurhash,
    focus: focus.focus,
    video_focus: preview.video ? focus.video_focus : null,
  };
}

function effectOf(row: EffectRow, url: PublicUrl): Effect {
  return {
    id: row.id,
    slug: row.slug,
    category_id: row.category_ids[0] ?? null,
    category_ids: row.category_ids,
    name: row.name,
    description: row.description,
    preview_url: url(row.poster_key),
    preview_video_url: row.preview_video_key && url(row.preview_video_key),
    preview_animation_url: row.preview_animation_key && url(row.preview_animation_key),
    preview: row.preview && previewView(row.preview, row, url),
    cost: row.cost,
    characters: row.characters,
    max_inputs: row.characters.reduce((sum, character) => sum + character.max_photos, 0),
    min_inputs: row.characters.reduce((sum, character) => sum + character.min_photos, 0),
    output_type: row.output_type,
    author_id: row.author_id,
    author_name: row.author_name,
    tags: row.tags,
  };
}

const bytesOfView = new WeakMap<Effect, Buffer>();

/**
 * An effect view's JSON bytes, made once per view (views are kept in the catalog cache and never
 * changed): a page of known effects is then copies of bytes, not serialising and encoding.
 */
export function effectBytes(view: Effect): Buffer {
  let bytes = bytesOfView.get(view);
  if (bytes === undefined) {
    bytes = Buffer.from(JSON.stringify(view));
    bytesOfView.set(view, bytes);
  }
  return bytes;
}

/**
 * Renders effects as the contract's Effect, in the order of `ids` (missing ids are skipped). Hidden
 * and unlisted effects render too: a generation made with an effect shows it whatever became of it.
 *
 * `category_ids` puts enabled categories first, each group in the effect's own order; `author_name`
 * is null for official effects, for an author without a name and for a deleted author. A view
 * depends on catalog data only (no popularity), so `store` keeps each until the catalog changes: a
 * page of a search nobody made before reads only the effects no page showed yet, together with
 * those the other requests of the moment miss (`readTogether`).
 */
export async function loadEffects(db: Knex, url: PublicUrl, ids: string[], locale: Locale, store: CatalogStore = computeEveryTime): Promise<Effect[]> {
  const views = await rememberEach<string, Effect>(store, ids, {
    key: (id) => `effect-view\u0000${locale}\u0000${id}`,
    bytes: (view) => 64 + (view ? effectBytes(view).length * 3 : 0),
    untilChanged: true,
  }, async (missing) => {
    const rows = await readTogether(db, missing, locale);
    const found = new Map<string, Effect>();
    for (const id of missing) {
      const row = rows.get(id);
      if (row) found.set(id, effectOf(row, url));
    }
    return found;
  });
  return views.filter((view): view is Effect => view !== null);
}

/** Effect rows asked for in the current turn of the event loop, per database handle and locale. */
const gathering = new WeakMap<Knex, Map<Locale, { ids: Set<string>; rows: Promise<Map<string, EffectRow>> }>>();

/**
 * The rows of `ids`, read in one statement with those every other caller asks for in the same turn
 * of the event loop (the statement starts once its callbacks have run: `setImmediate`). Under a burst
 * of distinct searches each page needs a view or two that no page showed yet, and a statement per
 * request costs many times what a row does. A transaction is a handle of its own: it shares with nobody.
 */
function readTogether(db: Knex, ids: string[], locale: Locale): Promise<Map<string, EffectRow>> {
  let byLocale = gathering.get(db);
  if (!byLocale) gathering.set(db, (byLocale = new Map()));
  const batches = byLocale;
  let batch = batches.get(locale);
  if (!batch) {
    const asked = new Set<string>();
    const rows = new Promise<Map<string, EffectRow>>((resolve, reject) => setImmediate(() => {
      batches.delete(locale);
      readEffectRows(db, [...asked], locale).then(resolve, reject);
    }));
    batch = { ids: asked, rows };
    batches.set(locale, batch);
  }
  for (const id of ids) batch.ids.add(id);
  return batch.rows;
}

async function readEffectRows(db: Knex, ids: string[], locale: Locale): Promise<Map<string, EffectRow>> {
  const { rows } = await db.raw<{ rows: EffectRow[] }>(
    `select e.id, e.slug, e.name_${locale} as name, e.description_${locale} as description,
       e.poster_key, e.preview_video_key, e.preview_animation_key, e.preview, e.focus, e.video_focus,
       e.cost, e.characters, e.output_type, e.author_id,
       case when a.deleted_at is null then nullif(btrim(a.name), '') end as author_name,
       array(select c.id from effect_categories ec join categories c on c.id = ec.category_id
             where ec.effect_id = e.id order by c.enabled desc, ec.position, c.position, c.slug) as category_ids,
       array(select t.slug from effect_tags et join tags t on t.id = et.tag_id
             where et.effect_id = e.id order by et.position, t.slug) as tags
     from effects e left join authors a on a.id = e.author_id
     where e.id = any(:ids::uuid[])`,
    { ids },
  );
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * One effect rendered for nesting (a generation's detail), or null when it no longer exists.
 * `storage` makes the preview URLs from the stored keys.
 */
export async function effectView(db: Knex, storage: Storage, effectId: string, locale: Locale): Promise<Effect | null> {
  const [effect] = await loadEffects(db, publicUrlOf(storage), [effectId], locale);
  return effect ?? null;
}

export function publicUrlOf(storage: Storage): PublicUrl {
  return (key) => storage.publicUrl(key);
}
