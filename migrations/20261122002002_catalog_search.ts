import type { Knex } from 'knex';

/**
 * Search over the catalog (the contract: catalog search), done by Postgres indexes:
 * - `catalog_normalize` folds case and accents (ё is е) the same way for texts and queries;
 * - `effect_search` holds each effect's name and description vectors per locale, with both the
 *   language's stems (word forms) and the plain words (prefixes), under GIN indexes. They live
 *   beside `effects`, not in it: they are most of an effect's bytes, and only search reads them,
 *   so lists and counts scan narrow rows. A trigger keeps them in step with the texts;
 * - tags and categories have small name vectors of their own, so disabling a category takes its
 *   name out of search at once;
 * - `search_words` lists every word of the catalog per locale, for finding the words a typo stands for.
 */
const locales = [
  { locale: 'ru', config: 'russian' },
  { locale: 'en', config: 'english' },
];

/** Language stems and plain words of a text: prefixes are matched against the plain words. */
const vectorOf = (config: string, text: string) =>
  `to_tsvector('${config}'::regconfig, catalog_normalize(${text})) || to_tsvector('simple'::regconfig, catalog_normalize(${text}))`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create extension if not exists unaccent');
  await knex.raw('create extension if not exists fuzzystrmatch');
  // unaccent() is only stable (its dictionary could be changed); with the dictionary named it is
  // safe to treat as immutable, which generated columns and indexes require.
  await knex.raw(`
    create function catalog_normalize(text) returns text language sql immutable strict parallel safe
    as $$ select lower(public.unaccent('public.unaccent'::regdictionary, $1)) $$`);

  await knex.raw(`create table effect_search (
    effect_id uuid primary key references effects (id) on delete cascade,
    ${locales.map(({ locale }) => `name_vector_${locale} tsvector not null, description_vector_${locale} tsvector not null`).join(',\n    ')}
  )`);
  for (const { locale, config } of locales) {
    await knex.raw(`create index effect_search_name_${locale} on effect_search using gin (name_vector_${locale})`);
    await knex.raw(`create index effect_search_description_${locale} on effect_search using gin (description_vector_${locale})`);
    // Tags are found by their slug (a Latin word) in both languages, as well as by their name.
    await knex.raw(`alter table tags add column name_vector_${locale} tsvector generated always as (${vectorOf(config, `name_${locale} || ' ' || slug`)}) stored`);
    await knex.raw(`alter table categories add column name_vector_${locale} tsvector generated always as (${vectorOf(config, `name_${locale}`)}) stored`);
  }

  await knex.raw(`create table search_words (
    locale text not null,
    word text not null
  )`);
  // text_pattern_ops: the prefix test (word like 'abc%') is a range scan whatever the collation.
  await knex.raw('create unique index search_words_word on search_words (locale, word text_pattern_ops)');
  // Typo candidates are words of about the same length.
  await knex.raw('create index search_words_length on search_words (locale, char_length(word))');

  // Words are remembered when texts are written and never forgotten: a stale word only widens the
  // typo candidates, and a new effect must be findable at once.
  await knex.raw(`
    create function remember_search_words(locale text, content text) returns void language sql as $$
      insert into search_words (locale, word)
      select $1, lexeme from unnest(to_tsvector('simple'::regconfig, catalog_normalize($2)))
      on conflict do nothing
    $$`);
  await knex.raw(`
    create function index_effect_texts() returns trigger language plpgsql as $$
    begin
      insert into effect_search (effect_id, ${locales.map(({ locale }) => `name_vector_${locale}, description_vector_${locale}`).join(', ')})
      values (new.id, ${locales.map(({ locale, config }) => `${vectorOf(config, `new.name_${locale}`)}, ${vectorOf(config, `new.description_${locale}`)}`).join(',\n        ')})
      on conflict (effect_id) do update set
        ${locales.map(({ locale }) => `name_vector_${locale} = excluded.name_vector_${locale}, description_vector_${locale} = excluded.description_vector_${locale}`).join(',\n        ')};
      ${locales.map(({ locale }) => `perform remember_search_words('${locale}', new.name_${locale} || ' ' || new.description_${locale});`).join('\n      ')}
      return null;
    end $$`);
  await knex.raw(`create trigger effects_index_texts after insert or update of name_ru, name_en, description_ru, description_en
    on effects for each row execute function index_effect_texts()`);
  await knex.raw(`
    create function remember_name_words() returns trigger language plpgsql as $$
    begin
      perform remember_search_words('ru', new.name_ru);
      perform remember_search_words('en', new.name_en);
      return null;
    end $$`);
  await knex.raw(`create trigger categories_remember_words after insert or update of name_ru, name_en
    on categories for each row execute function remember_name_words()`);
  // A tag's slug is searchable too; the slug is folded into its names for the word list.
  await knex.raw(`
    create function remember_tag_words() returns trigger language plpgsql as $$
    begin
      perform remember_search_words('ru', new.name_ru || ' ' || new.slug);
      perform remember_search_words('en', new.name_en || ' ' || new.slug);
      return null;
    end $$`);
  await knex.raw(`create trigger tags_remember_words after insert or update of name_ru, name_en, slug
    on tags for each row execute function remember_tag_words()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger tags_remember_words on tags');
  await knex.raw('drop trigger categories_remember_words on categories');
  await knex.raw('drop trigger effects_index_texts on effects');
  await knex.raw('drop function remember_tag_words(), remember_name_words(), index_effect_texts(), remember_search_words(text, text)');
  await knex.raw('drop table search_words');
  await knex.raw('drop table effect_search');
  for (const { locale } of locales) {
    await knex.raw(`alter table tags drop column name_vector_${locale}`);
    await knex.raw(`alter table categories drop column name_vector_${locale}`);
  }
  await knex.raw('drop function catalog_normalize(text)');
}
