import type { Knex } from 'knex';
import { availableEffect, curatedOrder, type EffectFilters, type IdPage } from './catalog-order';
import type { Locale } from './locale';
import { maxThematicEffects } from './thematic-search';

/**
 * One locale's search index: the lexemes Postgres made of each listed effect's fields (the vectors
 * of the search migrations: name, labels = tags with their slugs and enabled categories,
 * description), inverted, with the curated order and the filters' memberships. It is built from
 * one statement and kept in the catalog cache, so it is exactly as fresh as the cached lists
 * (dropped by the catalog version's announcement); matching a query is then arithmetic on it.
 */
export interface SearchIndex {
  /** The listed effects in curated order: an effect is known by its place here. */
  ids: string[];
  /** Every distinct lexeme, sorted, so the lexemes starting with a word are one run of it. */
  lexemes: string[];
  postings: Map<string, Postings>;
  byCategory: Map<string, Set<number>>;
  byTag: Map<string, Set<number>>;
  placeOf: Map<string, number>;
}

/** The places of the effects having one lexeme, per field. */
interface Postings {
  name: number[];
  labels: number[];
  description: number[];
}

const levelOfField = { name: 3, labels: 2, description: 1 } as const;

/** A listed effect as the statement gives it: its place in curated order, id, lexemes per field, category and tag ids. */
type IndexedEffect = [place: number, id: string, name: string[], labels: string[], description: string[], categoryIds: string[], tagIds: string[]];

/**
 * Reads the index of `locale` in one statement: one JSON value (parsed natively, far cheaper than
 * rows of arrays) listing the effects with their places and lexemes, inverted here. Postgres only
 * reads; grouping the lexemes there would sort them under the database's collation.
 */
export async function loadSearchIndex(db: Knex, locale: Locale): Promise<SearchIndex> {
  // The curated order is numbered apart from the lexemes: sorting the wide rows would spill to disk.
  const { rows } = await db.raw<{ rows: { effects: IndexedEffect[] | null }[] }>(
    `with listed as (
       select e.id, (row_number() over (order by ${curatedOrder('e')}))::int - 1 as place
       from effects e where ${availableEffect('e')}
     )
     select json_agg(json_build_array(l.place, l.id,
         coalesce(tsvector_to_array(s.name_vector_${locale}), '{}'),
         coalesce(tsvector_to_array(s.label_vector_${locale}), '{}'),
         coalesce(tsvector_to_array(s.description_vector_${locale}), '{}'),
         array(select ec.category_id from effect_categories ec where ec.effect_id = l.id),
         array(select et.tag_id from effect_tags et where et.effect_id = l.id))) as effects
     from listed l left join effect_search s on s.effect_id = l.id`,
  );
  const index: SearchIndex = { ids: [], lexemes: [], postings: new Map(), byCategory: new Map(), byTag: new Map(), placeOf: new Map() };
  const postingsOf = (lexeme: string) => {
    let posted = index.postings.get(lexeme);
    if (!posted) index.postings.set(lexeme, (posted = { name: [], labels: [], description: [] }));
    return posted;
  };
  const member = (groups: Map<string, Set<number>>, id: string, place: number) => {
    let places = groups.get(id);
    if (!places) groups.set(id, (places = new Set()));
    places.add(place);
  };
  const effects = rows[0].effects ?? [];
  index.ids = new Array<string>(effects.length);
  for (const [place, id, name, labels, description, categoryIds, tagIds] of effects) {
    index.ids[place] = id;
    index.placeOf.set(id, place);
    for (const lexeme of name) postingsOf(lexeme).name.push(place);
    for (const lexeme of labels) postingsOf(lexeme).labels.push(place);
    for (const lexeme of description) postingsOf(lexeme).description.push(place);
    for (const categoryId of categoryIds) member(index.byCategory, categoryId, place);
    for (const tagId of tagIds) member(index.byTag, tagId, place);
  }
  index.lexemes = [...index.postings.keys()].sort();
  return index;
}

/** Roughly what an index holds in memory, for the cache's budget. */
export function searchIndexBytes(index: SearchIndex): number {
  let bytes = 64 + index.ids.length * 160;
  for (const [lexeme, posted] of index.postings) {
    bytes += 96 + lexeme.length * 2 + (posted.name.length + posted.labels.length + posted.description.length) * 8;
  }
  for (const places of [...index.byCategory.values(), ...index.byTag.values()]) bytes += 64 + places.size * 24;
  return bytes;
}

/**
 * The page of a search (the rules are `searchEffectIds`'s): `words` are each word's forms, the
 * typed word first. A word matches the start of a lexeme of a name or a label, or any of its forms
 * as a whole lexeme in any field; its level in an effect is its best field's.
 */
export function matchSearchIndex(
  index: SearchIndex,
  query: { words: string[][]; filters: EffectFilters; thematicIds: string[]; limit: number; offset: number },
): IdPage {
  const { words, filters } = query;
  const count = index.ids.length;
  const matched = new Uint8Array(count);
  const inName = new Uint8Array(count);
  const inLabels = new Uint8Array(count);
  const inDescription = new Uint8Array(count);
  const touched: number[] = [];
  const level = new Uint8Array(count);
  for (const forms of words) {
    const reached: number[] = [];
    const raise = (places: number[], to: number) => {
      for (const place of places) {
        if (level[place] === 0) reached.push(place);
        if (level[place] < to) level[place] = to;
      }
    };
    for (const lexeme of lexemesStartingWith(index.lexemes, forms[0])) {
      const posted = index.postings.get(lexeme)!;
      raise(posted.name, levelOfField.name);
      raise(posted.labels, levelOfField.labels);
    }
    for (const form of forms) {
      const posted = index.postings.get(form);
      if (!posted) continue;
      for (const field of ['name', 'labels', 'description'] as const) raise(posted[field], levelOfField[field]);
    }
    for (const place of reached) {
      if (matched[place] === 0) touched.push(place);
      matched[place] += 1;
      if (level[place] === levelOfField.name) inName[place] += 1;
      else if (level[place] === levelOfField.labels) inLabels[place] += 1;
      else inDescription[place] += 1;
      level[place] = 0;
    }
  }

  const inCategory = filters.categoryId === null ? null : index.byCategory.get(filters.categoryId) ?? new Set<number>();
  const withTag = filters.tagId === null ? null : index.byTag.get(filters.tagId) ?? new Set<number>();
  const passes = (place: number) => (!inCategory || inCategory.has(place)) && (!withTag || withTag.has(place));

  const candidates = touched.filter(passes);
  const complete = candidates.filter((place) => matched[place] === words.length);
  // Effects with every word come alone when there are any; otherwise those with part of the words.
  const chosen = complete.length ? complete : candidates;
  chosen.sort((a, b) => matched[b] - matched[a] || inName[b] - inName[a] || inLabels[b] - inLabels[a]
    || inDescription[b] - inDescription[a] || a - b);

  const thematic: number[] = [];
  const isChosen = new Set(chosen);
  for (const id of query.thematicIds) {
    if (thematic.length === maxThematicEffects) break;
    const place = index.placeOf.get(id);
    if (place !== undefined && passes(place) && !isChosen.has(place) && !thematic.includes(place)) thematic.push(place);
  }

  const ranked = chosen.concat(thematic);
  return {
    total: ranked.length,
    ids: ranked.slice(query.offset, query.offset + query.limit).map((place) => index.ids[place]),
  };
}

/** The run of sorted `lexemes` that start with `start` (a binary search for its beginning). */
function* lexemesStartingWith(lexemes: string[], start: string): Generator<string> {
  let low = 0;
  let high = lexemes.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (lexemes[middle] < start) low = middle + 1;
    else high = middle;
  }
  for (let at = low; at < lexemes.length && lexemes[at].startsWith(start); at++) yield lexemes[at];
}
