import type { Knex } from 'knex';
import { page, type Page, type Paging } from '../http/paging';
import { availableEffect, categoryPlacement, curatedOrder, filterConditions, withTag, type EffectFilters, type IdPage } from './catalog-order';
import { findEnabledCategoryId } from './categories';
import { loadEffects, type Effect, type PublicUrl } from './effect-view';
import type { Locale } from './locale';
import { searchEffectIds } from './search';
import { parseSearch } from './search-words';
import { findTagId } from './tags';
import { minThematicQueryLength, type ThematicSearch } from './thematic-search';

export interface NewEffectSlots {
  /** How many places after the pinned effects go to new effects. */
  slots: number;
  /** How long an effect counts as new in a category. */
  days: number;
}

export interface EffectListRequest {
  locale: Locale;
  /** A category id or slug. */
  category?: string;
  /** A tag slug. */
  tag?: string;
  search?: string;
  paging: Paging;
  newEffects: NewEffectSlots;
  thematic?: ThematicSearch | null;
}

/**
 * `GET /v1/effects`: the flat list in curated order, a category in its own order (rule 3), or
 * search results (rule 4); filters combine with each other and with search. An unknown or disabled
 * category and an unknown tag are an empty list, not an error: links to them outlive them.
 */
export async function listEffects(db: Knex, url: PublicUrl, request: EffectListRequest): Promise<Page<Effect>> {
  const { locale, paging } = request;
  const query = parseSearch(request.search);
  const empty = page<Effect>([], 0, paging);
  if (query.kind === 'nothing') return empty;

  const filters: EffectFilters = { categoryId: null, tagId: null };
  // An empty parameter (`category=`) is no filter, as clients build query strings.
  if (request.category) {
    filters.categoryId = await findEnabledCategoryId(db, request.category);
    if (!filters.categoryId) return empty;
  }
  if (request.tag) {
    filters.tagId = await findTagId(db, request.tag);
    if (!filters.tagId) return empty;
  }

  let found: IdPage;
  if (query.kind === 'words') {
    const asked = request.search!.trim();
    const thematicIds = request.thematic && asked.length >= minThematicQueryLength
      ? await request.thematic.closestEffects(asked, locale)
      : [];
    found = await searchEffectIds(db, { words: query.words, locale, filters, paging, thematicIds });
  } else if (filters.categoryId) {
    found = await categoryEffectIds(db, filters, paging, request.newEffects);
  } else {
    found = await flatEffectIds(db, filters, paging);
  }
  return page(await loadEffects(db, url, found.ids, locale), found.total, paging);
}

/** The flat list: curated order, each effect once whatever its number of categories. */
async function flatEffectIds(db: Knex, filters: EffectFilters, paging: Paging): Promise<IdPage> {
  const listed = `from effects e where ${availableEffect('e')} and ${filterConditions('e.id')}`;
  const { rows } = await db.raw<{ rows: IdPage[] }>(
    `select (select count(*) ${listed}) as total,
       array(select e.id ${listed} order by ${curatedOrder('e')} limit :limit offset :offset) as ids`,
    { ...filters, ...paging },
  );
  return rows[0];
}

/** One category in its server-side order (rule 3). */
async function categoryEffectIds(db: Knex, filters: EffectFilters, paging: Paging, newEffects: NewEffectSlots): Promise<IdPage> {
  const { rows } = await db.raw<{ rows: IdPage[] }>(
    `with placement as (${categoryPlacement}),
     listed as (select effect_id, rank from placement where ${withTag('placement.effect_id')})
     select (select count(*) from listed) as total,
       array(select effect_id from listed order by rank limit :limit offset :offset) as ids`,
    { ...filters, ...paging, newEffectSlots: newEffects.slots, newEffectDays: newEffects.days },
  );
  return rows[0];
}
