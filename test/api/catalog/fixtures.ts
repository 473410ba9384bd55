import { expect } from 'chai';
import type { ModelRoutes } from '../../../db/catalog/model';
import type { Answer } from '../../client';
import { services } from '../../harness';

/**
 * Catalog rows written straight into the tables, so each test states exactly the catalog it needs
 * (previews are not built here; `previews.test.ts` and the importer tests build real ones).
 */

type Names = { ru: string; en: string };

export async function addCategory(slug: string, options: { enabled?: boolean; position?: number; name?: Names; icon?: string } = {}): Promise<string> {
  const [row] = await services().db('categories').insert({
    slug,
    enabled: options.enabled ?? true,
    position: options.position ?? 0,
    name_ru: options.name?.ru ?? `Категория ${slug}`,
    name_en: options.name?.en ?? `Category ${slug}`,
    icon: options.icon ?? '',
  }).returning('id');
  return row.id;
}

export async function addTag(slug: string, name?: Names): Promise<string> {
  const [row] = await services().db('tags').insert({ slug, name_ru: name?.ru ?? slug, name_en: name?.en ?? slug }).returning('id');
  return row.id;
}

export async function addAuthor(options: { name?: string | null; disabled?: boolean; userId?: string; deleted?: boolean } = {}): Promise<string> {
  const [row] = await services().db('authors').insert({
    name: options.name === undefined ? 'Author' : options.name,
    disabled: options.disabled ?? false,
    user_id: options.userId ?? null,
    deleted_at: options.deleted ? new Date() : null,
  }).returning('id');
  return row.id;
}

export type CategoryLink = string | { slug: string; pinnedTop?: number; pinnedBottom?: number; newSince?: Date };

export interface EffectFixture {
  name?: Names;
  description?: Names;
  categories?: CategoryLink[];
  tags?: string[];
  position?: number;
  successCount?: number;
  demoted?: boolean;
  hidden?: boolean;
  authorId?: string;
  characters?: { min_photos: number; max_photos: number }[];
  cost?: number;
  model?: string;
  runs?: ModelRoutes;
}

/** An effect; its categories and tags must exist (by slug). */
export async function addEffect(slug: string, options: EffectFixture = {}): Promise<string> {
  const { db } = services();
  const [row] = await db('effects').insert({
    slug,
    name_ru: options.name?.ru ?? `Эффект ${slug}`,
    name_en: options.name?.en ?? `Effect ${slug}`,
    description_ru: options.description?.ru ?? '',
    description_en: options.description?.en ?? '',
    cost: options.cost ?? 10,
    characters: JSON.stringify(options.characters ?? [{ min_photos: 1, max_photos: 1 }]),
    model: options.model ?? 'image',
    runs: options.runs ? JSON.stringify(options.runs) : null,
    position: options.position ?? 0,
    success_count: options.successCount ?? 0,
    demoted_at: options.demoted ? new Date() : null,
    hidden: options.hidden ?? false,
    author_id: options.authorId ?? null,
    poster_key: `effects/fixture/${slug}/poster.jpg`,
  }).returning('id');
  for (const [position, link] of (options.categories ?? []).entries()) {
    const reference = typeof link === 'string' ? { slug: link } : link;
    const category = await db('categories').where({ slug: reference.slug }).first('id');
    await db('effect_categories').insert({
      effect_id: row.id,
      category_id: category.id,
      position,
      pinned_top: reference.pinnedTop ?? null,
      pinned_bottom: reference.pinnedBottom ?? null,
      new_since: reference.newSince ?? null,
    });
  }
  for (const [position, slugOfTag] of (options.tags ?? []).entries()) {
    const tag = await db('tags').where({ slug: slugOfTag }).first('id');
    await db('effect_tags').insert({ effect_id: row.id, tag_id: tag.id, position });
  }
  return row.id;
}

/** The slugs of a list answer, after checking it is a 200. */
export function slugsOf(answer: Answer): string[] {
  expect(answer.status, answer.text).to.equal(200);
  return answer.body.items.map((item: { slug: string }) => item.slug);
}
