import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { page, type Page, type Paging } from '../http/paging';
import type { Freshness } from './catalog-cache';
import { availableEffect, categoryPlacement, curatedOrder, filterConditions, withTag, type EffectFilters, type IdPage } from './catalog-order';
import { findEnabledCategoryId } from './categories';
import { computeEveryTime, type CatalogStore } from './catalog-store';
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
  /** The provider kinds a task may go to here: an effect none of them runs is not listed (`availableEffect`). */
  offered: readonly ProviderKind[];
}

/**
 * `GET /v1/effects`: the flat list in curated order, a category in its own order (rule 3), or
 * search results (rule 4); filters combine with each other and with search. An unknown or disabled
 * category and an unknown tag are an empty list, not an error: links to them outlive them.
 *
 * The flat list and each category (with or without a tag) are one ordered list of ids, computed
 * once per catalog version (`lists`) and sliced per page; search matches in memory on the index
 * and the words' forms and matches kept in `lists` too (`search.ts`).
 * `freshness`: how long the page is true, limited here to its list's.
 */
export async function listEffects(
  db: Knex,
  url: PublicUrl,
  request: EffectListRequest,
  lists: CatalogStore = computeEveryTime,
  freshness?: Freshness,
): Promise<Page<Effect>> {
  const { locale, paging } = request;
  const query = parseSearch(request.search);
  const empty = page<Effect>([], 0, paging);
  if (query.kind === 'nothing') return empty;

  let found: IdPage;
  if (query.kind === 'words') {
    const filters = await resolveFilters(db, request);
    if (!filters) return empty;
    const asked = request.search!.trim();
    const thematicIds = request.thematic && asked.length >= minThematicQueryLength
      ? await request.thematic.closestEffects(asked, locale)
      : [];
    found = await searchEffectIds(db, { words: query.words, locale, filters, paging, thematicIds, offered: request.offered }, lists, freshness);
  } else {
    const key = `ids\u0000${request.category ?? ''}\u0000${request.tag ?? ''}`;
    const ids = await lists.remember<string[]>(key, (list) => 64 + list.length * 48, async (listFreshness) => {
      const filters = await resolveFilters(db, request);
      if (!filters) return [];
      return filters.categoryId
        ? categoryEffectIds(db, filters, request.newEffects, request.offered, listFreshness)
        : flatEffectIds(db, filters, request.offered);
    }, freshness, { untilChanged: !request.category });
    found = { ids: ids.slice(paging.offset, paging.offset + paging.limit), total: ids.length };
  }
  return page(await loadEffects(db, url, found.ids, locale, lists), found.total, paging);
}

/** The category and tag filters as ids, or null when one names nothing listable (an empty list). */
async function resolveFilters(db: Knex, request: EffectListRequest): Promise<EffectFilters | null> {
  const filters: EffectFilters = { categoryId: null, tagId: null };
  // An empty parameter (`category=`) is no filter, as clients build query strings.
  if (request.category) {
    filters.categoryId = await findEnabledCategoryId(db, request.category);
    if (!filters.categoryId) return null;
  }
  if (request.tag) {
    filters.tagId = await findTagId(db, request.tag);
    if (!filters.tagId) return null;
  }
  return filters;
}

/** The flat list: curated order, each effect once whatever its number of categories. */
async function flatEffectIds(db: Knex, filters: EffectFilters, offered: readonly ProviderKind[]): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { ids: string[] }[] }>(
    `select array(select e.id from effects e where ${availableEffect('e', offered)} and ${filterConditions('e.id')}
       order by ${curatedOrder('e')}) as ids`,
    { ...filters },
  );
  return rows[0].ids;
}

/**
 * One category in its server-side order (rule 3), whole. The order changes by itself when a new
 * effect stops being new: the list says when (`freshness`).
 */
async function categoryEffectIds(db: Knex, filters: EffectFilters, newEffects: NewEffectSlots, offered: readonly ProviderKind[], freshness: Freshness): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { ids: string[]; new_until: Date | null }[] }>(
    `with placement as (${categoryPlacement(offered)}),
     listed as (select effect_id, rank from placement where ${withTag('placement.effect_id')})
     select array(select effect_id from listed order by rank) as ids,
       (select min(ec.new_since + make_interval(days => :newEffectDays)) from effect_categories ec
        where ec.category_id = :categoryId and ec.new_since + make_interval(days => :newEffectDays) > now()) as new_until`,
    { ...filters, newEffectSlots: newEffects.slots, newEffectDays: newEffects.days },
  );
  if (rows[0].new_until) freshness.limitTo(new Date(rows[0].new_until).getTime());
  return rows[0].ids;
}
