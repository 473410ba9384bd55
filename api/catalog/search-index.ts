import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { availableEffect, curatedOrder, type EffectFilters, type IdPage } from './catalog-order';
import type { Locale } from './locale';
import { maxSearchWords } from './search-words';
import { maxThematicEffects } from './thematic-search';

/**
 * One locale's search index: the lexemes Postgres made of each listed effect's fields (the vectors
 * of the search migrations: name, labels = tags with their slugs and enabled categories,
 * description), inverted, with the curated order and the filters' memberships. It is built from
 * one statement and kept in the catalog cache, so it is exactly as fresh as the cached lists
 * (dropped by the catalog version's announcement); matching a query is then arithmetic on it.
 */
export interface SearchIndex {
  /** Tells this index from every other one this process built: what is kept per word names it. */
  serial: number;
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

let builtIndexes = 0;

/** A listed effect as the statement gives it: its place in curated order, id, lexemes per field, category and tag ids. */
type IndexedEffect = [place: number, id: string, name: string[], labels: string[], description: string[], categoryIds: string[], tagIds: string[]];

/**
 * Reads the index of `locale` in one statement: one JSON value (parsed natively, far cheaper than
 * rows of arrays) listing the effects with their places and lexemes, inverted here. Postgres only
 * reads; grouping the lexemes there would sort them under the database's collation.
 */
export async function loadSearchIndex(db: Knex, locale: Locale, offered: readonly ProviderKind[]): Promise<SearchIndex> {
  // The curated order is numbered apart from the lexemes: sorting the wide rows would spill to disk.
  const { rows } = await db.raw<{ rows: { effects: IndexedEffect[] | null }[] }>(
    `with listed as (
       select e.id, (row_number() over (order by ${curatedOrder('e')}))::int - 1 as place
       from effects e where ${availableEffect('e', offered)}
     )
     select json_agg(json_build_array(l.place, l.id,
         coalesce(tsvector_to_array(s.name_vector_${locale}), '{}'),
         coalesce(tsvector_to_array(s.label_vector_${locale}), '{}'),
         coalesce(tsvector_to_array(s.description_vector_${locale}), '{}'),
         array(select ec.category_id from effect_categories ec where ec.effect_id = l.id),
         array(select et.tag_id from effect_tags et where et.effect_id = l.id))) as effects
     from listed l left join effect_search s on s.effect_id = l.id`,
  );
  const index: SearchIndex = { serial: (builtIndexes += 1), ids: [], lexemes: [], postings: new Map(), byCategory: new Map(), byTag: new Map(), placeOf: new Map() };
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
 * One word's matches in an index: each effect the word matches, in curated order (ascending
 * places), with the word's level there (its best field: name 3, labels 2, description 1). The same
 * for every query with the word, so the catalog cache keeps it beside the index (`searchEffectIds`).
 */
export interface WordMatch {
  places: Int32Array;
  levels: Uint8Array;
}

/**
 * `forms` (the typed word first) match the start of a lexeme of a name or a label, or any form as
 * a whole lexeme in any field. Runs on the index's own scratch counters, cleared before it returns
 * (matching is synchronous: one at a time uses them).
 */
export function matchWord(index: SearchIndex, forms: string[]): WordMatch {
  const { level } = scratchOf(index);
  const reached: number[] = [];
  const raise = (places: number[], to: number) => {
    for (const place of places) {
      if (level[place] === 0) reached.push(place);
      if (level[place] < to) level[place] = to;
    }
  };
  const { lexemes, postings } = index;
  for (let at = firstStartingWith(lexemes, forms[0]); at < lexemes.length && lexemes[at].startsWith(forms[0]); at++) {
    const posted = postings.get(lexemes[at])!;
    raise(posted.name, levelOfField.name);
    raise(posted.labels, levelOfField.labels);
  }
  for (const form of forms) {
    const posted = postings.get(form);
    if (!posted) continue;
    raise(posted.name, levelOfField.name);
    raise(posted.labels, levelOfField.labels);
    raise(posted.description, levelOfField.description);
  }
  const match: WordMatch = { places: Int32Array.from(reached).sort(), levels: new Uint8Array(reached.length) };
  match.places.forEach((place, at) => {
    match.levels[at] = level[place];
    level[place] = 0;
  });
  return match;
}

/** Roughly what a word's matches hold in memory, for the cache's budget. */
export function wordMatchBytes(match: WordMatch): number {
  return 96 + match.places.length * 5;
}

/**
 * The page of a search (the rules are `searchEffectIds`'s), from each word's matches: effects with
 * every word come first (alone, when there are any), then more words in the name, in labels, in
 * the description; ties keep the catalog order. The effects with every word are found first, by
 * walking the shortest word's matches through the others (sorted lists), and only they are ranked;
 * only without any does every matched effect count (`withPartOfTheWords`). Either way only the
 * page's end is kept in rank order (`BestKeys`): the others are counted, never sorted.
 */
export function matchSearchIndex(
  index: SearchIndex,
  query: { words: WordMatch[]; filters: EffectFilters; thematicIds: string[]; limit: number; offset: number },
): IdPage {
  const { words, filters } = query;
  const inCategory = filters.categoryId === null ? null : index.byCategory.get(filters.categoryId) ?? new Set<number>();
  const withTag = filters.tagId === null ? null : index.byTag.get(filters.tagId) ?? new Set<number>();
  const passes = (place: number) => (!inCategory || inCategory.has(place)) && (!withTag || withTag.has(place));

  const end = query.offset + query.limit;
  // Ranked up to the page's end: no more than the catalog holds.
  const ranked = Math.min(end, index.ids.length);
  const every = withEveryWord(words, passes, ranked);
  const allWords = every.total > 0;
  const chosen = allWords ? every : withPartOfTheWords(index, words, passes, ranked);
  const matchedEnough = (place: number) => (allWords
    ? words.every((word) => includes(word.places, place))
    : words.some((word) => includes(word.places, place)));

  const thematic: number[] = [];
  for (const id of query.thematicIds) {
    if (thematic.length === maxThematicEffects) break;
    const place = index.placeOf.get(id);
    if (place !== undefined && passes(place) && !matchedEnough(place) && !thematic.includes(place)) thematic.push(place);
  }

  const ids: string[] = [];
  for (let at = query.offset; at < chosen.best.length; at++) ids.push(index.ids[placeOfKey(chosen.best[at])]);
  if (end > chosen.total) {
    for (const place of thematic.slice(Math.max(0, query.offset - chosen.total), end - chosen.total)) ids.push(index.ids[place]);
  }
  return { total: chosen.total + thematic.length, ids };
}

/** The effects a search chose: how many, and the sort keys (`rankKey`) of the best, in rank order. */
interface Ranked {
  total: number;
  best: Float64Array;
}

/** The effects (that pass the filters) with every word, each word's level counted per field; the `count` best kept. */
function withEveryWord(words: WordMatch[], passes: (place: number) => boolean, count: number): Ranked {
  const best = new BestKeys(count);
  let total = 0;
  if (words.length) {
    const [shortest, ...others] = [...words].sort((a, b) => a.places.length - b.places.length);
    /** Where each other word's walk stands: places before it are below the current one. */
    const from = new Array<number>(others.length).fill(0);
    candidates: for (let at = 0; at < shortest.places.length; at++) {
      const place = shortest.places[at];
      let score = scoreOfLevel[shortest.levels[at]];
      for (let other = 0; other < others.length; other++) {
        const { places, levels } = others[other];
        const position = lowerBound(places, place, from[other]);
        from[other] = position;
        // A word whose matches are all behind: no later place has every word either.
        if (position === places.length) break candidates;
        if (places[position] !== place) continue candidates;
        score += scoreOfLevel[levels[position]];
      }
      if (passes(place)) {
        total += 1;
        best.offer(rankKey(score, place));
      }
    }
  }
  return { total, best: best.sorted() };
}

/**
 * The effects (that pass the filters) with at least one word, scored on the index's scratch
 * (`scores`), cleared before it returns, so a search allocates nothing per effect of the catalog;
 * the `count` best kept.
 */
function withPartOfTheWords(index: SearchIndex, words: WordMatch[], passes: (place: number) => boolean, count: number): Ranked {
  const { scores, touched } = scratchOf(index);
  let touchedCount = 0;
  try {
    for (const { places, levels } of words) {
      for (let at = 0; at < places.length; at++) {
        const place = places[at];
        if (scores[place] === 0) touched[touchedCount++] = place;
        scores[place] += scoreOfLevel[levels[at]];
      }
    }
    const best = new BestKeys(count);
    let total = 0;
    for (let at = 0; at < touchedCount; at++) {
      const place = touched[at];
      if (!passes(place)) continue;
      total += 1;
      best.offer(rankKey(scores[place], place));
    }
    return { total, best: best.sorted() };
  } finally {
    // Clearing the whole array (a memset) costs less than visiting each touched place.
    scores.fill(0);
  }
}

/**
 * The `count` smallest of the keys offered (distinct numbers), in a max-heap: a key that cannot
 * enter costs one comparison, one that can a walk down the heap; only the kept ones are sorted.
 */
class BestKeys {
  private readonly heap: Float64Array;
  private size = 0;

  constructor(count: number) {
    this.heap = new Float64Array(Math.max(0, count));
  }

  offer(key: number): void {
    const { heap } = this;
    if (this.size < heap.length) {
      let at = this.size++;
      while (at > 0) {
        const parent = (at - 1) >>> 1;
        if (heap[parent] >= key) break;
        heap[at] = heap[parent];
        at = parent;
      }
      heap[at] = key;
    } else if (heap.length > 0 && key < heap[0]) {
      let at = 0;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= heap.length) break;
        const larger = left + 1 < heap.length && heap[left + 1] > heap[left] ? left + 1 : left;
        if (heap[larger] <= key) break;
        heap[at] = heap[larger];
        at = larger;
      }
      heap[at] = key;
    }
  }

  sorted(): Float64Array {
    return this.heap.subarray(0, this.size).sort();
  }
}

/**
 * Per effect of an index: its score for a query so far (`scores`, see `scoreOfLevel`) and its best
 * field for the word being matched (`level`); room for every effect's place (`touched`).
 */
interface MatchScratch {
  scores: Uint16Array;
  level: Uint8Array;
  touched: Int32Array;
}

const scratches = new WeakMap<SearchIndex, MatchScratch>();

function scratchOf(index: SearchIndex): MatchScratch {
  let scratch = scratches.get(index);
  if (!scratch) {
    const count = index.ids.length;
    scratch = {
      scores: new Uint16Array(count),
      level: new Uint8Array(count),
      touched: new Int32Array(count),
    };
    scratches.set(index, scratch);
  }
  return scratch;
}

/** Each counter is at most the number of words (`maxSearchWords`): the bits one takes in a score. */
const counterBits = Math.ceil(Math.log2(maxSearchWords + 1));
/** Places below 2^24 (16 million effects): a sort key stays an exact integer of a double. */
const placeScale = 2 ** 24;
const maxScore = (1 << (4 * counterBits)) - 1;

/** The top counter of a score: one more word the effect has. */
const wordPart = 1 << (3 * counterBits);
/**
 * What one word adds to an effect's score, by its level there (1 description, 2 labels, 3 name): a
 * score is four counters packed in one number, most significant first: the words the effect has,
 * those in its name, in labels, in the description. Counters never carry into each other (each is
 * at most `maxSearchWords`), so a word's part is a sum, and comparing scores compares the counters
 * in that order.
 */
const scoreOfLevel = [0, wordPart + 1, wordPart + (1 << counterBits), wordPart + (1 << (2 * counterBits))];

/**
 * A candidate's score and place packed into one number, smaller ranks first: the higher score,
 * then the catalog order for ties. Sorting these as numbers needs no comparator call per pair.
 */
function rankKey(score: number, place: number): number {
  return (maxScore - score) * placeScale + place;
}

function placeOfKey(key: number): number {
  return key % placeScale;
}

/** Whether the ascending `places` hold `place`. */
function includes(places: Int32Array, place: number): boolean {
  const at = lowerBound(places, place, 0);
  return at < places.length && places[at] === place;
}

/**
 * The first position at or after `from` of the ascending `places` whose place is not below `place`:
 * strides doubling from `from`, then a binary search in the last one, so a walk through a list in
 * small steps costs little more than a merge, and a long jump stays logarithmic.
 */
function lowerBound(places: Int32Array, place: number, from: number): number {
  let low = from;
  let stride = 1;
  while (low + stride < places.length && places[low + stride] < place) {
    low += stride;
    stride *= 2;
  }
  let high = Math.min(low + stride + 1, places.length);
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (places[middle] < place) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Where the run of sorted `lexemes` that start with `start` begins (a binary search). */
function firstStartingWith(lexemes: string[], start: string): number {
  let low = 0;
  let high = lexemes.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (lexemes[middle] < start) low = middle + 1;
    else high = middle;
  }
  return low;
}
