import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import type { Paging } from '../http/paging';
import type { Freshness } from './catalog-cache';
import type { EffectFilters, IdPage } from './catalog-order';
import { computeEveryTime, rememberEach, type CatalogStore } from './catalog-store';
import { searchConfigOf, type Locale } from './locale';
import { loadSearchIndex, matchSearchIndex, matchWord, searchIndexBytes, wordMatchBytes, type SearchIndex, type WordMatch } from './search-index';

/**
 * Search by words (catalog rule 4).
 *
 * Per query word (already lower-case, without request words, at most eight):
 * - forms: the word itself, its stems in the locale's language (word forms), and, when the word is
 *   not in the catalog as typed (not even as the start of a word), the catalog words one letter
 *   away (two for words of six letters or more); words under four letters get no typo forms;
 * - in a name, a tag or an enabled category the word matches the start of a word (`word:*`) or any
 *   of its forms; in the description only its forms, i.e. whole words. Matching is on the start of
 *   lexemes, so a fragment from the middle of a word never matches.
 *
 * An effect matches a word in its best field: name 3, tag or category 2, description 1. Effects
 * with every word come first (alone, when there are any); otherwise effects with part of the words,
 * most words first. Then more words in the name, in tags or categories, in the description; ties
 * keep the catalog order. Thematic ids, when given, follow the matches by words.
 *
 * How: Postgres makes the lexemes (the fields' text search vectors, the stems and the
 * typo forms of a word: its full-text and Levenshtein machinery), and `store` (the catalog cache) keeps
 * both what it made of the catalog (`SearchIndex`, one per locale) and each word's forms until the
 * catalog changes. A query whose words are known is then matched in memory, without a statement:
 * as the lists, search reads the catalog once per version, not once per request. Each word's
 * matches in the index are kept too (per index), so a new query of known words only adds them up.
 */
export async function searchEffectIds(
  db: Knex,
  request: { words: string[]; locale: Locale; filters: EffectFilters; paging: Paging; thematicIds: string[]; offered: readonly ProviderKind[] },
  store: CatalogStore = computeEveryTime,
  freshness?: Freshness,
): Promise<IdPage> {
  const { locale, filters, paging, thematicIds } = request;
  const indexKey = `search-index\u0000${locale}`;
  const [forms, index] = await Promise.all([
    searchWordForms(db, request.words, locale, store, freshness),
    store.peek<SearchIndex>(indexKey, freshness) ?? store.remember(indexKey, searchIndexBytes, () => loadSearchIndex(db, locale, request.offered), freshness, { untilChanged: true }),
  ]);
  // A word of punctuation only normalises to nothing: it has no forms and is left out.
  const known = forms.filter((wordForms) => wordForms.length > 0);
  const words = await rememberEach<string[], WordMatch>(store, known, {
    key: (wordForms) => `search-word-match\u0000${index.serial}\u0000${wordForms.join('\u0000')}`,
    bytes: (match) => (match ? wordMatchBytes(match) : 64),
    untilChanged: true,
  }, async (missing) => new Map(missing.map((wordForms) => [wordForms, matchWord(index, wordForms)])), freshness);
  return matchSearchIndex(index, { words: words.map((match) => match!), filters, thematicIds, limit: paging.limit, offset: paging.offset });
}

/**
 * Each word's forms (rule 4 above), the normalised word itself first; none for a word that
 * normalises to nothing. A word's forms depend only on the catalog's words, so `store` keeps them
 * per locale until the catalog changes; the words missing from it are found in one statement.
 */
export async function searchWordForms(db: Knex, words: string[], locale: Locale, store: CatalogStore, freshness?: Freshness): Promise<string[][]> {
  const forms = await rememberEach<string, string[]>(store, words, {
    key: (word) => `search-word-forms\u0000${locale}\u0000${word}`,
    bytes: (wordForms) => 64 + (wordForms ?? []).join('').length * 4,
    untilChanged: true,
  }, (missing) => computeWordForms(db, missing, locale), freshness);
  return forms.map((wordForms) => wordForms ?? []);
}

async function computeWordForms(db: Knex, words: string[], locale: Locale): Promise<Map<string, string[]>> {
  const { rows } = await db.raw<{ rows: { typed: string; forms: string[] }[] }>(
    `with query_words as (
       select typed, translate(catalog_normalize(typed), '''\\', '') as word
       from unnest(:words::text[]) as typed
     ),
     stemmed as (
       select q.typed, q.word,
         array(select lexeme from unnest(to_tsvector(:config::regconfig, q.word))) as stems,
         case when char_length(q.word) >= 6 then 2 else 1 end as typos
       from query_words q
     )
     select w.typed,
       case when w.word = '' then '{}'::text[] else array[w.word] || w.stems || case
         when char_length(w.word) < 4 or exists (
           select 1 from unnest(array[w.word] || w.stems) as start, search_words known
           where known.locale = :locale and known.word ~>=~ start and known.word ~<~ (start || chr(1114111))
         ) then '{}'::text[]
         else array(
           select near.word from search_words near
           where near.locale = :locale
             and char_length(near.word) between char_length(w.word) - w.typos and char_length(w.word) + w.typos
             and levenshtein_less_equal(near.word, w.word, w.typos) <= w.typos
         )
       end end as forms
     from stemmed w`,
    { words, locale, config: searchConfigOf[locale] },
  );
  return new Map(rows.map((row) => [row.typed, row.forms]));
}
