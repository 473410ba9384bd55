import type { Knex } from 'knex';

/**
 * Search matches in memory (`api/catalog/search-index.ts`): each web process reads the
 * fields' lexemes once per catalog version and matches queries against them, so nothing queries
 * the vectors' GIN indexes any more, nor the weighted documents made for them. Both go; the
 * vectors themselves (and the labels' triggers) stay: they are what the index is read from.
 */
const locales = ['ru', 'en'];

export async function up(knex: Knex): Promise<void> {
  for (const locale of locales) {
    await knex.raw(`alter table effect_search drop column document_${locale}`);
    await knex.raw(`drop index effect_search_name_${locale}`);
    await knex.raw(`drop index effect_search_description_${locale}`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const locale of locales) {
    await knex.raw(`create index effect_search_name_${locale} on effect_search using gin (name_vector_${locale})`);
    await knex.raw(`create index effect_search_description_${locale} on effect_search using gin (description_vector_${locale})`);
    await knex.raw(`alter table effect_search add column document_${locale} tsvector generated always as (
      setweight(name_vector_${locale}, 'A') || setweight(label_vector_${locale}, 'B') || setweight(description_vector_${locale}, 'C')
    ) stored`);
    await knex.raw(`create index effect_search_document_${locale} on effect_search using gin (document_${locale})`);
  }
}
