import type { Knex } from 'knex';

/**
 * One weighted search document per effect and locale, so the effects
 * with every word of a query come out of one GIN index instead of matching each word in each field
 * and aggregating every hit:
 * - `document_<locale>` = the name's vector with weight A, the labels' (tags with their slugs, enabled
 *   categories) with B, the description's with C; a query restricts a word to A or B where it may
 *   match the start of a word, and reads an effect's level per word from the weights;
 * - `label_vector_<locale>` holds the names of the effect's tags and enabled categories; statement
 *   triggers on the links, on tags and on categories keep it in step in the changing transaction, so
 *   disabling a category still takes its name out of search at once.
 * The per-field GIN indexes of the search migration stay: when no effect has every word, each word's
 * hits per field are found through them (cheaper for thousands of partial matches than testing
 * each candidate's document word by word).
 */
const locales = ['ru', 'en'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create aggregate tsvector_agg(tsvector) (sfunc = tsvector_concat, stype = tsvector, initcond = \'\')');
  for (const locale of locales) {
    await knex.raw(`alter table effect_search
      add column label_vector_${locale} tsvector not null default '',
      add column document_${locale} tsvector generated always as (
        setweight(name_vector_${locale}, 'A') || setweight(label_vector_${locale}, 'B') || setweight(description_vector_${locale}, 'C')
      ) stored`);
  }

  await knex.raw(`
    create function refresh_search_labels(effect_ids uuid[]) returns void language sql as $$
      update effect_search s set ${locales.map((locale) => `label_vector_${locale} = labels.${locale}`).join(', ')}
      from (
        select effect.id, ${locales.map((locale) => `
          (select tsvector_agg(t.name_vector_${locale} order by t.id) from effect_tags et join tags t on t.id = et.tag_id
           where et.effect_id = effect.id)
          || (select tsvector_agg(c.name_vector_${locale} order by c.id) from effect_categories ec join categories c on c.id = ec.category_id
           where ec.effect_id = effect.id and c.enabled) as ${locale}`).join(',')}
        from (select distinct unnest(effect_ids) as id) effect
      ) labels
      where s.effect_id = labels.id
    $$`);

  // Links: the effects of the links added, removed or changed (a changed pin changes no label).
  for (const [table, target] of [['effect_categories', 'category_id'], ['effect_tags', 'tag_id']]) {
    await knex.raw(`
      create function ${table}_refresh_labels() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          perform refresh_search_labels(array(select effect_id from added));
        elsif tg_op = 'DELETE' then
          perform refresh_search_labels(array(select effect_id from removed));
        elsif tg_op = 'UPDATE' then
          perform refresh_search_labels(array(select moved.effect_id from (
            (select effect_id, ${target} from added except select effect_id, ${target} from removed)
            union all (select effect_id, ${target} from removed except select effect_id, ${target} from added)) moved));
        else
          perform refresh_search_labels(array(select effect_id from effect_search));
        end if;
        return null;
      end $$`);
    await knex.raw(`create trigger ${table}_labels_added after insert on ${table}
      referencing new table as added for each statement execute function ${table}_refresh_labels()`);
    await knex.raw(`create trigger ${table}_labels_removed after delete on ${table}
      referencing old table as removed for each statement execute function ${table}_refresh_labels()`);
    await knex.raw(`create trigger ${table}_labels_changed after update on ${table}
      referencing old table as removed new table as added for each statement execute function ${table}_refresh_labels()`);
    await knex.raw(`create trigger ${table}_labels_truncated after truncate on ${table}
      for each statement execute function ${table}_refresh_labels()`);
  }

  // Labels themselves: a renamed tag or category, a category enabled or disabled.
  for (const [table, links, target, searched] of [
    ['categories', 'effect_categories', 'category_id', 'name_ru, name_en, enabled'],
    ['tags', 'effect_tags', 'tag_id', 'name_ru, name_en, slug'],
  ]) {
    await knex.raw(`
      create function ${table}_refresh_labels() returns trigger language plpgsql as $$
      begin
        perform refresh_search_labels(array(
          select link.effect_id from ${links} link
          where link.${target} in (
            select changed.id from changed join previous on previous.id = changed.id
            where (changed.${searched.split(', ').join(', changed.')}) is distinct from (previous.${searched.split(', ').join(', previous.')}))));
        return null;
      end $$`);
    await knex.raw(`create trigger ${table}_labels_changed after update on ${table}
      referencing old table as previous new table as changed for each statement execute function ${table}_refresh_labels()`);
  }

  await knex.raw('select refresh_search_labels(array(select effect_id from effect_search))');
  for (const locale of locales) {
    await knex.raw(`create index effect_search_document_${locale} on effect_search using gin (document_${locale})`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['categories', 'tags']) {
    await knex.raw(`drop trigger ${table}_labels_changed on ${table}`);
    await knex.raw(`drop function ${table}_refresh_labels()`);
  }
  for (const table of ['effect_categories', 'effect_tags']) {
    for (const change of ['added', 'removed', 'changed', 'truncated']) await knex.raw(`drop trigger ${table}_labels_${change} on ${table}`);
    await knex.raw(`drop function ${table}_refresh_labels()`);
  }
  await knex.raw('drop function refresh_search_labels(uuid[])');
  for (const locale of locales) {
    await knex.raw(`alter table effect_search drop column document_${locale}, drop column label_vector_${locale}`);
  }
  await knex.raw('drop aggregate tsvector_agg(tsvector)');
}
