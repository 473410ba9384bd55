import type { Knex } from 'knex';
import type { Paging } from '../http/paging';
import type { Freshness } from './catalog-cache';
import { availableEffect, curatedOrder, filterConditions, type EffectFilters, type IdPage } from './catalog-order';
import { computeEveryTime, type CatalogStore } from './catalog-store';
import { searchConfigOf, type Locale } from './locale';
import { maxThematicEffects } from './thematic-search';

/**
 * Search by words (catalog rule 4), in one statement over the indexes of the search migration.
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
 * How (issue 15): each word's forms come from `store` (the catalog cache: people search the same
 * words in different queries, and the forms change only with the catalog). The effects with every
 * word come from one search of the weighted documents (migration `search_documents`: name A, tags
 * and categories B, description C), and only those are ranked, each word's level read from the
 * weights. Only when none has every word are each word's hits gathered per field through the
 * fields' own indexes. The statement is prepared once per connection and locale (a named
 * statement) and runs on a generic plan: its shape is the same for every query (the words arrive as
 * arrays), and Postgres otherwise chose a custom plan every time, 2 to 3 ms of planning a query.
 */
export async function searchEffectIds(
  db: Knex,
  request: { words: string[]; locale: Locale; filters: EffectFilters; paging: Paging; thematicIds: string[] },
  store: CatalogStore = computeEveryTime,
  freshness?: Freshness,
): Promise<IdPage> {
  const { locale, filters, paging, thematicIds } = request;
  // A word of punctuation only normalises to nothing: it has no forms and is left out.
  const words = (await searchWordForms(db, request.words, locale, store, freshness)).filter((forms) => forms.length > 0);
  // The generic plan is asked for this statement's transaction only (see above).
  const { rows } = await db.transaction(async (trx) => {
    await trx.raw('set local plan_cache_mode = force_generic_plan');
    return trx.raw<{ rows: IdPage[] }>(
      `with word_forms as (
         select position, form from unnest(:formPositions::int[], :forms::text[]) as listed(position, form)
       ),
       -- A word matches the start of a word in a name, a tag or a category (start), or any of its forms
       -- anywhere (forms). In the weighted document: the name is A, labels (tags, categories) B.
       word_queries as (
         select q.position,
           forms.any_field::tsquery as forms,
           ('''' || q.word || ''':* | ' || forms.any_field)::tsquery as start,
           ('''' || q.word || ''':*AB | ' || forms.any_field)::tsquery as in_document,
           ('''' || q.word || ''':*A | ' || forms.in_name)::tsquery as in_name,
           ('''' || q.word || ''':*B | ' || forms.in_labels)::tsquery as in_labels
         from unnest(:words::text[]) with ordinality as q(word, position), lateral (
           select string_agg('''' || f.form || '''', ' | ') as any_field,
             string_agg('''' || f.form || ''':A', ' | ') as in_name,
             string_agg('''' || f.form || ''':B', ' | ') as in_labels
           from word_forms f where f.position = q.position
         ) forms
       ),
       -- Effects with every word: one search of the documents' index, then each word's level is read
       -- from the weights of these few: name (3), tag or category (2), description (1).
       complete as (
         select e.id, e.demoted_at, e.position, e.created_at, d.document_${locale} as document
         from effect_search d join effects e on e.id = d.effect_id
         where d.document_${locale} @@ (select string_agg('(' || in_document::text || ')', ' & ')::tsquery from word_queries)
           and ${availableEffect('e')} and ${filterConditions('e.id')}
       ),
       complete_scored as (
         select c.id, c.demoted_at, c.position, c.created_at, counts.*
         from complete c, lateral (
           select count(*) as matched,
             count(*) filter (where level = 3) as in_name,
             count(*) filter (where level = 2) as in_tags,
             count(*) filter (where level = 1) as in_description
           from (
             select case when c.document @@ q.in_name then 3 when c.document @@ q.in_labels then 2 else 1 end as level
             from word_queries q
           ) levels
         ) counts
       ),
       -- Only when no effect has every word: each word's hits in each field, through the per-field
       -- indexes (thousands of effects may have one of the words), at the word's best level.
       hits as (
         select v.effect_id, q.position, 3 as level
         from word_queries q join effect_search v on v.name_vector_${locale} @@ q.start
         where not exists (select 1 from complete)
         union all
         select v.effect_id, q.position, 1
         from word_queries q join effect_search v on v.description_vector_${locale} @@ q.forms
         where not exists (select 1 from complete)
         union all
         select et.effect_id, q.position, 2
         from word_queries q
         join tags t on t.name_vector_${locale} @@ q.start
         join effect_tags et on et.tag_id = t.id
         where not exists (select 1 from complete)
         union all
         select ec.effect_id, q.position, 2
         from word_queries q
         join categories c on c.enabled and c.name_vector_${locale} @@ q.start
         join effect_categories ec on ec.category_id = c.id
         where not exists (select 1 from complete)
       ),
       word_levels as (
         select effect_id, position, max(level) as level from hits group by effect_id, position
       ),
       partial_scored as (
         select e.id, e.demoted_at, e.position, e.created_at, s.matched, s.in_name, s.in_tags, s.in_description
         from (
           select effect_id, count(*) as matched,
             count(*) filter (where level = 3) as in_name,
             count(*) filter (where level = 2) as in_tags,
             count(*) filter (where level = 1) as in_description
           from word_levels group by effect_id
         ) s
         join effects e on e.id = s.effect_id
         where ${availableEffect('e')} and ${filterConditions('e.id')}
       ),
       chosen as (
         select * from complete_scored
         union all
         select * from partial_scored
       ),
       thematic as (
         select e.id, e.demoted_at, e.position, e.created_at, suggested.rank
         from unnest(:thematicIds::uuid[]) with ordinality as suggested(id, rank)
         join effects e on e.id = suggested.id
         where ${availableEffect('e')} and ${filterConditions('e.id')}
           and not exists (select 1 from chosen where chosen.id = e.id)
         order by suggested.rank
         limit ${maxThematicEffects}
       ),
       ranked as (
         select id, demoted_at, position, created_at, 0 as part, matched, in_name, in_tags, in_description, 0 as thematic_rank
         from chosen
         union all
         select id, demoted_at, position, created_at, 1, 0, 0, 0, 0, rank from thematic
       )
       select (select count(*) from ranked) as total,
         array(
           -- Only the page is sorted in full (a top-N sort), not every match.
           select r.id from ranked r
           order by r.part, r.matched desc, r.in_name desc, r.in_tags desc, r.in_description desc, r.thematic_rank, ${curatedOrder('r')}
           limit :limit offset :offset
         ) as ids`,
      {
        words: words.map((forms) => forms[0]),
        formPositions: words.flatMap((forms, index) => forms.map(() => index + 1)),
        forms: words.flat(),
        thematicIds,
        categoryId: filters.categoryId,
        tagId: filters.tagId,
        limit: paging.limit,
        offset: paging.offset,
      },
    ).options({ name: `search-effect-ids-${locale}` });
  });
  return rows[0];
}

/**
 * Each word's forms (rule 4 above), the normalised word itself first; none for a word that
 * normalises to nothing. A word's forms depend only on the catalog's words, so `store` keeps them
 * per locale until the catalog changes; the words missing from it are found in one statement.
 */
export async function searchWordForms(db: Knex, words: string[], locale: Locale, store: CatalogStore, freshness?: Freshness): Promise<string[][]> {
  const missing: string[] = [];
  let found: Promise<Map<string, string[]>> | null = null;
  return Promise.all(words.map((word) => store.remember(
    `search-word-forms\u0000${locale}\u0000${word}`,
    (forms) => 64 + (word.length + forms.join('').length) * 4,
    async () => {
      // Every miss of this call registers before the statement starts: a store asks for a missing
      // value at once, in the same turn of the event loop.
      missing.push(word);
      found ??= Promise.resolve().then(() => computeWordForms(db, missing, locale));
      return (await found).get(word)!;
    },
    freshness,
  )));
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
  ).options({ name: `search-word-forms-${locale}` });
  return new Map(rows.map((row) => [row.typed, row.forms]));
}
