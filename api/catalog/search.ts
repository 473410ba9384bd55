import type { Knex } from 'knex';
import type { Paging } from '../http/paging';
import { availableEffect, curatedOrder, filterConditions, type EffectFilters, type IdPage } from './catalog-order';
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
 */
export async function searchEffectIds(
  db: Knex,
  request: { words: string[]; locale: Locale; filters: EffectFilters; paging: Paging; thematicIds: string[] },
): Promise<IdPage> {
  const { words, locale, filters, paging, thematicIds } = request;
  const { rows } = await db.raw<{ rows: IdPage[] }>(
    `with query_words as (
       select typed.position, translate(catalog_normalize(typed.word), '''\\', '') as word
       from unnest(:words::text[]) with ordinality as typed(word, position)
     ),
     stemmed as (
       select q.position, q.word,
         array(select lexeme from unnest(to_tsvector(:config::regconfig, q.word))) as stems,
         case when char_length(q.word) >= 6 then 2 else 1 end as typos
       from query_words q
       where q.word <> ''
     ),
     word_forms as (
       select w.position, w.word,
         array[w.word] || w.stems || case
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
         end as forms
       from stemmed w
     ),
     word_queries as (
       select f.position,
         (select string_agg('''' || form || '''', ' | ') from unnest(f.forms) as form)::tsquery as forms_query,
         ('''' || f.word || ''':* | ' || (select string_agg('''' || form || '''', ' | ') from unnest(f.forms) as form))::tsquery as start_query
       from word_forms f
     ),
     hits as (
       select v.effect_id, q.position, 3 as level
       from word_queries q join effect_search v on v.name_vector_${locale} @@ q.start_query
       union all
       select v.effect_id, q.position, 1
       from word_queries q join effect_search v on v.description_vector_${locale} @@ q.forms_query
       union all
       select et.effect_id, q.position, 2
       from word_queries q
       join tags t on t.name_vector_${locale} @@ q.start_query
       join effect_tags et on et.tag_id = t.id
       union all
       select ec.effect_id, q.position, 2
       from word_queries q
       join categories c on c.enabled and c.name_vector_${locale} @@ q.start_query
       join effect_categories ec on ec.category_id = c.id
     ),
     word_levels as (
       select effect_id, position, max(level) as level from hits group by effect_id, position
     ),
     scored as (
       select effect_id, count(*) as matched,
         count(*) filter (where level = 3) as in_name,
         count(*) filter (where level = 2) as in_tags,
         count(*) filter (where level = 1) as in_description
       from word_levels group by effect_id
     ),
     word_count as (select count(*) as n from stemmed),
     complete as (
       select s.* from scored s join effects e on e.id = s.effect_id
       where s.matched = (select n from word_count) and ${availableEffect('e')} and ${filterConditions('e.id')}
     ),
     -- Partial matches are ranked only when no effect has every word (none is complete).
     chosen as (
       select * from complete
       union all
       select s.* from scored s join effects e on e.id = s.effect_id
       where not exists (select 1 from complete) and ${availableEffect('e')} and ${filterConditions('e.id')}
     ),
     thematic as (
       select e.id as effect_id, suggested.rank
       from unnest(:thematicIds::uuid[]) with ordinality as suggested(id, rank)
       join effects e on e.id = suggested.id
       where ${availableEffect('e')} and ${filterConditions('e.id')}
         and not exists (select 1 from chosen where chosen.effect_id = e.id)
       order by suggested.rank
       limit ${maxThematicEffects}
     ),
     ranked as (
       select effect_id, 0 as part, matched, in_name, in_tags, in_description, 0 as thematic_rank from chosen
       union all
       select effect_id, 1, 0, 0, 0, 0, rank from thematic
     )
     select (select count(*) from ranked) as total,
       array(
         -- Only the page is sorted in full (a top-N sort), not every match.
         select r.effect_id from ranked r join effects e on e.id = r.effect_id
         order by r.part, r.matched desc, r.in_name desc, r.in_tags desc, r.in_description desc, r.thematic_rank, ${curatedOrder('e')}
         limit :limit offset :offset
       ) as ids`,
    {
      words,
      locale,
      config: searchConfigOf[locale],
      thematicIds,
      categoryId: filters.categoryId,
      tagId: filters.tagId,
      limit: paging.limit,
      offset: paging.offset,
    },
  );
  return rows[0];
}
