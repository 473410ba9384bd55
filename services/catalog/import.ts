import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import pLimit from 'p-limit';
import { quantity } from '../../common/plural';
import { modelRoutesProblems, type RouteTask } from '../../common/model-route-check';
import { problemsOf, type JsonSchema, type Problem } from '../../common/validation';
import type { Storage } from '../../media/storage';
import type { Character, FocusPoint, Localized, ModelRoutes, PreviewColumns, StoredPreview } from '../../db/catalog/model';
import { nextPosition } from '../../db/catalog/next-position';
import { routeColumns } from '../../db/catalog/route-columns';
import { writeStudioCategories, type StudioCategoryRow } from '../../db/studio/write-studio-categories';
import { checkPreviewMedia, previewFolder, storeAuthorAvatar, storePreview, type PreviewMedia } from './previews';

/**
 * The operator's catalog import (`scripts/import-catalog.ts`, and the demo seed): categories, tags,
 * authors, effects and studio categories from one document, matched by slug (authors by id), so a
 * second run updates instead of duplicating. What runs an effect or a studio category is `model` (a
 * simulator model) and/or `runs`, a route per provider kind (`common/model-route.ts`; checked by
 * `common/model-route-check.ts`; docs/providers.md for operators).
 *
 * All or nothing: every row is checked first (shape, references, readable media) and any problem
 * stops the import before anything is written, with one message per bad row. Then the previews are
 * made and stored (immutable keys, so stored files are harmless if the import stops later), and all
 * rows are written in one transaction. An effect whose poster and clip did not change keeps its
 * preview without rebuilding it.
 */

export interface CategoryRow {
  slug: string;
  name: Localized;
  enabled?: boolean;
  position?: number;
  icon?: string;
}

export interface TagRow {
  slug: string;
  name: Localized;
}

export interface AuthorRow {
  id: string;
  name?: string | null;
  /** A media reference to an image. */
  avatar?: string;
  disabled?: boolean;
}

/** A category of an effect, with the operator's pin inside that category if any. */
export type EffectCategoryRef = string | { slug: string; pinned_top?: number; pinned_bottom?: number };

export interface EffectRow {
  slug: string;
  name: Localized;
  description?: Localized;
  cost: number;
  characters: Character[];
  output_type?: 'image' | 'video';
  /** The simulator's model: short for `runs.simulator`. `model`, `runs` or both. */
  model?: string;
  /** A route per provider kind: which model runs the effect there and how its input is built. */
  runs?: ModelRoutes;
  model_max_photos?: number | null;
  categories?: EffectCategoryRef[];
  tags?: string[];
  author?: string | null;
  /** Media references: a file path for the import script, a demo asset name for the seed. */
  poster: string;
  clip?: string;
  focus?: FocusPoint | null;
  video_focus?: FocusPoint | null;
  position?: number;
  hidden?: boolean;
}

export interface CatalogDocument {
  categories?: CategoryRow[];
  tags?: TagRow[];
  authors?: AuthorRow[];
  effects?: EffectRow[];
  studio_categories?: StudioCategoryRow[];
}

export interface ImportProblem {
  /** Which row: `effects[3] (winter-portrait)`, or `document`. */
  row: string;
  message: string;
}

export class CatalogImportError extends Error {
  constructor(readonly problems: ImportProblem[]) {
    super(`the catalog was not imported: ${quantity(problems.length, 'problem')}\n${problems.map((problem) => `  ${problem.row}: ${problem.message}`).join('\n')}`);
  }
}

export interface ImportProgress {
  stage: 'check' | 'previews' | 'write';
  done: number;
  total: number;
  item?: string;
}

export interface ImportOptions {
  readMedia: (reference: string) => Promise<Buffer>;
  onProgress?: (progress: ImportProgress) => void;
}

export interface ImportSummary {
  categories: number;
  tags: number;
  authors: number;
  effectsCreated: number;
  effectsUpdated: number;
  previewsBuilt: number;
  studioCategories: number;
}

const slug = { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 64 };
const localized = {
  type: 'object',
  properties: { ru: { type: 'string', minLength: 1, maxLength: 200 }, en: { type: 'string', minLength: 1, maxLength: 200 } },
  required: ['ru', 'en'],
  additionalProperties: false,
};
const longLocalized = {
  ...localized,
  properties: { ru: { type: 'string', maxLength: 2000 }, en: { type: 'string', maxLength: 2000 } },
};
const point = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      properties: { x: { type: 'number', minimum: 0, maximum: 1 }, y: { type: 'number', minimum: 0, maximum: 1 } },
      required: ['x', 'y'],
      additionalProperties: false,
    },
  ],
};
const rank = { type: 'integer', minimum: 0, maximum: 1_000_000 };
const mediaReference = { type: 'string', minLength: 1, maxLength: 1000 };
const simulatorModel = { type: 'string', pattern: '^[a-z0-9_.-]+$', maxLength: 64 };
// Each route is checked by modelRoutesProblems once the row has its shape, with messages per kind.
const runs = { type: 'object' };

const rowSchemas = {
  categories: {
    type: 'object',
    properties: { slug, name: localized, enabled: { type: 'boolean' }, position: rank, icon: { type: 'string', maxLength: 200 } },
    required: ['slug', 'name'],
    additionalProperties: false,
  },
  tags: {
    type: 'object',
    // Tags are filter keys: lowercase single Latin words.
    properties: { slug: { type: 'string', pattern: '^[a-z]+$', maxLength: 32 }, name: localized },
    required: ['slug', 'name'],
    additionalProperties: false,
  },
  authors: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { anyOf: [{ type: 'null' }, { type: 'string', maxLength: 120 }] },
      avatar: mediaReference,
      disabled: { type: 'boolean' },
    },
    required: ['id'],
    additionalProperties: false,
  },
  effects: {
    type: 'object',
    properties: {
      slug,
      name: localized,
      description: longLocalized,
      cost: { type: 'integer', minimum: 0, maximum: 1_000_000 },
      characters: {
        type: 'array',
        minItems: 1,
        maxItems: 4,
        items: {
          type: 'object',
          properties: { min_photos: { type: 'integer', minimum: 0, maximum: 4 }, max_photos: { type: 'integer', minimum: 1, maximum: 4 } },
          required: ['min_photos', 'max_photos'],
          additionalProperties: false,
        },
      },
      output_type: { enum: ['image', 'video'] },
      model: simulatorModel,
      runs,
      model_max_photos: { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 1, maximum: 16 }] },
      categories: {
        type: 'array',
        items: {
          anyOf: [
            slug,
            {
              type: 'object',
              properties: { slug, pinned_top: rank, pinned_bottom: rank },
              required: ['slug'],
              additionalProperties: false,
            },
          ],
        },
      },
      tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$', maxLength: 32 } },
      author: { anyOf: [{ type: 'null' }, { type: 'string', format: 'uuid' }] },
      poster: mediaReference,
      clip: mediaReference,
      focus: point,
      video_focus: point,
      position: rank,
      hidden: { type: 'boolean' },
    },
    required: ['slug', 'name', 'cost', 'characters', 'poster'],
    additionalProperties: false,
  },
  studio_categories: {
    type: 'object',
    properties: {
      slug,
      name: localized,
      description: longLocalized,
      output_type: { enum: ['image', 'text'] },
      cost: { type: 'integer', minimum: 1, maximum: 1_000_000 },
      min_photos: { type: 'integer', minimum: 0, maximum: 4 },
      max_photos: { type: 'integer', minimum: 0, maximum: 4 },
      model: simulatorModel,
      runs,
      position: rank,
      enabled: { type: 'boolean' },
    },
    required: ['slug', 'name', 'output_type', 'cost', 'min_photos', 'max_photos'],
    additionalProperties: false,
  },
} satisfies Record<string, JsonSchema>;

type Section = keyof typeof rowSchemas;
const sections = Object.keys(rowSchemas) as Section[];

/** A problem of a row's shape, as the row errors say it: `cost must be >= 0`. */
function describe(problem: Problem): string {
  return `${problem.path.join('.') || 'row'} ${problem.message}`;
}

function rowName(section: Section, index: number, row: unknown): string {
  const key = (row as { slug?: unknown; id?: unknown } | null)?.slug ?? (row as { id?: unknown } | null)?.id;
  return `${section}[${index}]${typeof key === 'string' ? ` (${key})` : ''}`;
}

const slugOf = (reference: EffectCategoryRef) => (typeof reference === 'string' ? reference : reference.slug);

/**
 * What runs a row: `model`, `runs` or both, the simulator named once; every route usable for the
 * row's task (`common/model-route-check.ts`).
 */
function routesProblems(row: { model?: string; runs?: ModelRoutes }, task: RouteTask): string[] {
  if (row.model === undefined && row.runs === undefined) return ['model or runs is required: what runs it (a simulator model, or a route per provider kind)'];
  if (row.runs === undefined) return [];
  if (row.model !== undefined && row.runs.simulator) return ['model and runs.simulator both name the simulator\'s model: keep one'];
  return modelRoutesProblems(row.runs, task).map((problem) => describe({ ...problem, path: ['runs', ...problem.path] }));
}

/** The rules JSON Schema cannot say about people and photos (contract: Effect `characters`). */
function charactersProblem(characters: Character[]): string | null {
  if (characters[0].min_photos < 1) return 'characters[0] is the first person and must have min_photos >= 1';
  const inverted = characters.findIndex((character) => character.min_photos > character.max_photos);
  if (inverted >= 0) return `characters[${inverted}] has min_photos above max_photos`;
  return null;
}

/** Shape, duplicates, references and readable media of every row; returns the problems found. */
async function checkDocument(db: Knex, raw: unknown, options: ImportOptions): Promise<{ document: CatalogDocument; problems: ImportProblem[] }> {
  const problems: ImportProblem[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { document: {}, problems: [{ row: 'document', message: `must be an object with ${sections.join(', ')}` }] };
  }
  const input = raw as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!(sections as string[]).includes(key)) problems.push({ row: 'document', message: `unknown section "${key}"` });
  }
  // Rows of the right shape, by section and with their index; only they are checked further, so
  // one bad row does not hide the problems of the others.
  const document: CatalogDocument = {};
  const indexes = new Map<unknown, number>();
  for (const section of sections) {
    const rows = input[section];
    if (rows === undefined) continue;
    if (!Array.isArray(rows)) {
      problems.push({ row: section, message: 'must be a list' });
      continue;
    }
    const seen = new Set<string>();
    const shaped = rows.filter((row, index) => {
      indexes.set(row, index);
      const name = rowName(section, index, row);
      const shapeProblems = problemsOf(rowSchemas[section], row, 'typed');
      if (shapeProblems.length) {
        for (const problem of shapeProblems) problems.push({ row: name, message: describe(problem) });
        return false;
      }
      const key = (row as { slug?: string; id?: string }).slug ?? (row as { id: string }).id;
      if (seen.has(key)) problems.push({ row: name, message: `${key} appears twice in ${section}` });
      seen.add(key);
      return true;
    });
    (document as Record<string, unknown>)[section] = shaped;
  }

  const known = async (table: string, column: string, inFile: string[]) =>
    new Set([...inFile, ...(await db(table).pluck(column)).map(String)]);
  const categories = await known('categories', 'slug', (document.categories ?? []).map((row) => row.slug));
  const tags = await known('tags', 'slug', (document.tags ?? []).map((row) => row.slug));
  const authors = await known('authors', 'id', (document.authors ?? []).map((row) => row.id.toLowerCase()));

  const effects = document.effects ?? [];
  let checked = 0;
  const total = effects.length + (document.authors ?? []).filter((row) => row.avatar).length;
  const tick = (item: string) => options.onProgress?.({ stage: 'check', done: ++checked, total, item });

  for (const row of effects) {
    const name = rowName('effects', indexes.get(row)!, row);
    const problem = (message: string) => problems.push({ row: name, message });
    const characters = charactersProblem(row.characters);
    if (characters) problem(characters);
    routesProblems(row, { persons: row.characters.length, photos: true }).forEach(problem);
    if (row.model_max_photos != null && row.model_max_photos < row.characters.reduce((sum, character) => sum + character.min_photos, 0)) {
      problem('model_max_photos is below the photos the effect needs at least');
    }
    for (const category of row.categories ?? []) {
      if (!categories.has(slugOf(category))) problem(`category ${slugOf(category)} is neither in the file nor in the catalog`);
    }
    const categorySlugs = (row.categories ?? []).map(slugOf);
    if (new Set(categorySlugs).size !== categorySlugs.length) problem('a category is listed twice');
    for (const tag of row.tags ?? []) {
      if (!tags.has(tag)) problem(`tag ${tag} is neither in the file nor in the catalog`);
    }
    if (new Set(row.tags).size !== (row.tags ?? []).length) problem('a tag is listed twice');
    if (row.author && !authors.has(row.author.toLowerCase())) problem(`author ${row.author} is neither in the file nor in the catalog`);
    if (row.video_focus && !row.clip) problem('video_focus needs a clip');
    try {
      await checkPreviewMedia({ poster: await options.readMedia(row.poster), clip: row.clip ? await options.readMedia(row.clip) : null });
    } catch (error) {
      problem(`media: ${(error as Error).message}`);
    }
    tick(row.slug);
  }
  for (const row of document.authors ?? []) {
    if (!row.avatar) continue;
    try {
      await checkPreviewMedia({ poster: await options.readMedia(row.avatar) });
    } catch (error) {
      problems.push({ row: rowName('authors', indexes.get(row)!, row), message: `avatar: ${(error as Error).message}` });
    }
    tick(row.id);
  }
  for (const row of document.studio_categories ?? []) {
    const name = rowName('studio_categories', indexes.get(row)!, row);
    if (row.min_photos > row.max_photos) problems.push({ row: name, message: 'min_photos is above max_photos' });
    // A studio task's photos are all its one person's.
    for (const message of routesProblems(row, { persons: 1, photos: row.min_photos > 0 })) problems.push({ row: name, message });
  }
  return { document, problems };
}

interface PreparedEffect {
  row: EffectRow;
  id: string;
  exists: boolean;
  /** Null when the stored preview already shows this poster and clip. */
  preview: PreviewColumns | null;
}

/**
 * Ids of existing effects, and previews made and stored for new or changed media, a few at a
 * time: one poster's copies do not keep both cores busy, and a clip's ffmpeg runs beside them.
 */
async function prepareEffects(db: Knex, storage: Storage, effects: EffectRow[], options: ImportOptions): Promise<PreparedEffect[]> {
  const existing = new Map<string, { id: string; poster_key: string | null; preview: StoredPreview | null }>(
    (await db('effects').whereIn('slug', effects.map((row) => row.slug)).select('slug', 'id', 'poster_key', 'preview'))
      .map((row) => [row.slug, row]),
  );
  const limit = pLimit(4);
  let done = 0;
  return Promise.all(effects.map((row) => limit(async (): Promise<PreparedEffect> => {
    const current = existing.get(row.slug);
    const id = current?.id ?? randomUUID();
    const media: PreviewMedia = {
      poster: await options.readMedia(row.poster),
      clip: row.clip ? await options.readMedia(row.clip) : null,
      focus: row.focus ?? null,
      videoFocus: row.video_focus ?? null,
    };
    const unchanged = current?.preview && current.poster_key?.startsWith(`${previewFolder(id, media)}/`);
    const preview = unchanged ? null : await storePreview(storage, id, media);
    options.onProgress?.({ stage: 'previews', done: ++done, total: effects.length, item: row.slug });
    return { row, id, exists: Boolean(current), preview };
  })));
}

export async function importCatalog(db: Knex, storage: Storage, raw: unknown, options: ImportOptions): Promise<ImportSummary> {
  const { document, problems } = await checkDocument(db, raw, options);
  if (problems.length) throw new CatalogImportError(problems);

  const effects = await prepareEffects(db, storage, document.effects ?? [], options);
  const avatars = new Map<string, string>();
  for (const author of document.authors ?? []) {
    if (author.avatar) avatars.set(author.id, await storeAuthorAvatar(storage, author.id.toLowerCase(), await options.readMedia(author.avatar)));
  }

  options.onProgress?.({ stage: 'write', done: 0, total: 1 });
  await db.transaction(async (trx) => {
    await writeCategories(trx, document.categories ?? []);
    await writeTags(trx, document.tags ?? []);
    await writeAuthors(trx, document.authors ?? [], avatars);
    await writeEffects(trx, effects);
    await writeStudioCategories(trx, document.studio_categories ?? [], { missingOnly: false });
  });
  options.onProgress?.({ stage: 'write', done: 1, total: 1 });
  return {
    categories: (document.categories ?? []).length,
    tags: (document.tags ?? []).length,
    authors: (document.authors ?? []).length,
    effectsCreated: effects.filter((effect) => !effect.exists).length,
    effectsUpdated: effects.filter((effect) => effect.exists).length,
    previewsBuilt: effects.filter((effect) => effect.preview).length,
    studioCategories: (document.studio_categories ?? []).length,
  };
}

async function writeCategories(trx: Knex.Transaction, rows: CategoryRow[]): Promise<void> {
  let next = await nextPosition(trx, 'categories');
  for (const row of rows) {
    const values = { name_ru: row.name.ru, name_en: row.name.en, ...(row.icon !== undefined ? { icon: row.icon } : {}), ...(row.enabled !== undefined ? { enabled: row.enabled } : {}) };
    const updated = await trx('categories').where({ slug: row.slug })
      .update({ ...values, ...(row.position !== undefined ? { position: row.position } : {}) });
    if (!updated) await trx('categories').insert({ slug: row.slug, ...values, position: row.position ?? next++ });
  }
}

async function writeTags(trx: Knex.Transaction, rows: TagRow[]): Promise<void> {
  for (const row of rows) {
    await trx('tags').insert({ slug: row.slug, name_ru: row.name.ru, name_en: row.name.en })
      .onConflict('slug').merge(['name_ru', 'name_en']);
  }
}

async function writeAuthors(trx: Knex.Transaction, rows: AuthorRow[], avatars: Map<string, string>): Promise<void> {
  for (const row of rows) {
    const avatar = avatars.get(row.id);
    const values = {
      ...(row.name !== undefined ? { name: row.name } : {}),
      ...(row.disabled !== undefined ? { disabled: row.disabled } : {}),
      ...(avatar ? { avatar_key: avatar } : {}),
    };
    const query = trx('authors').insert({ id: row.id.toLowerCase(), ...values }).onConflict('id');
    await (Object.keys(values).length ? query.merge(Object.keys(values)) : query.ignore());
  }
}

async function writeEffects(trx: Knex.Transaction, effects: PreparedEffect[]): Promise<void> {
  let next = await nextPosition(trx, 'effects');
  const categoryIds = new Map<string, string>((await trx('categories').select('slug', 'id')).map((row) => [row.slug, row.id]));
  const tagIds = new Map<string, string>((await trx('tags').select('slug', 'id')).map((row) => [row.slug, row.id]));
  for (const { row, id, exists, preview } of effects) {
    const values = {
      name_ru: row.name.ru,
      name_en: row.name.en,
      description_ru: row.description?.ru ?? '',
      description_en: row.description?.en ?? '',
      cost: row.cost,
      characters: JSON.stringify(row.characters),
      output_type: row.output_type ?? 'image',
      ...routeColumns(row),
      model_max_photos: row.model_max_photos ?? null,
      author_id: row.author?.toLowerCase() ?? null,
      focus: row.focus ? JSON.stringify(row.focus) : null,
      video_focus: row.clip && row.video_focus ? JSON.stringify(row.video_focus) : null,
      ...(row.hidden !== undefined ? { hidden: row.hidden } : {}),
      ...(preview
        ? {
            poster_key: preview.poster_key,
            preview_video_key: preview.preview_video_key,
            preview_animation_key: preview.preview_animation_key,
            preview: JSON.stringify(preview.preview),
          }
        : {}),
    };
    if (exists) {
      await trx('effects').where({ id }).update({ ...values, ...(row.position !== undefined ? { position: row.position } : {}), updated_at: trx.fn.now() });
    } else {
      await trx('effects').insert({ id, slug: row.slug, ...values, position: row.position ?? next++ });
    }
    if (row.categories) await writeEffectCategories(trx, id, row.categories, categoryIds);
    if (row.tags) {
      await trx('effect_tags').where({ effect_id: id }).delete();
      if (row.tags.length) {
        await trx('effect_tags').insert(row.tags.map((tag, position) => ({ effect_id: id, tag_id: tagIds.get(tag)!, position })));
      }
    }
  }
}

/**
 * The effect's categories become exactly the listed ones, in that order. A category the effect
 * was already in keeps its `new_since`: re-importing does not make an effect new again.
 */
async function writeEffectCategories(trx: Knex.Transaction, effectId: string, references: EffectCategoryRef[], categoryIds: Map<string, string>): Promise<void> {
  const links = references.map((reference, position) => ({
    effect_id: effectId,
    category_id: categoryIds.get(slugOf(reference))!,
    position,
    pinned_top: typeof reference === 'string' ? null : reference.pinned_top ?? null,
    pinned_bottom: typeof reference === 'string' ? null : reference.pinned_bottom ?? null,
    new_since: trx.fn.now(),
  }));
  await trx('effect_categories').where({ effect_id: effectId }).whereNotIn('category_id', links.map((link) => link.category_id)).delete();
  if (links.length) {
    await trx('effect_categories').insert(links).onConflict(['effect_id', 'category_id']).merge(['position', 'pinned_top', 'pinned_bottom']);
  }
}
