import type { Knex } from 'knex';

/**
 * The catalog: categories, effects and the link that carries each category's order, tags, authors,
 * complaints and author views. Localized texts are one column per locale (`ru`, `en`), so search
 * can index each language with its own stemmer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('categories', (table) => {
    table.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    table.text('slug').notNullable().unique();
    table.boolean('enabled').notNullable().defaultTo(true);
    table.integer('position').notNullable().defaultTo(0);
    table.text('name_ru').notNullable();
    table.text('name_en').notNullable();
    table.text('icon').notNullable().defaultTo('');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('authors', (table) => {
    table.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    table.text('name');
    table.text('avatar_key');
    table.boolean('disabled').notNullable().defaultTo(false);
    // The account behind a community author; null for authors the operator made.
    table.uuid('user_id').unique().references('id').inTable('users').onDelete('SET NULL');
    // Set when the account behind the author is deleted: the name goes, the effects stay.
    table.timestamp('deleted_at', { useTz: true });
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // A person who deletes their account takes their name off the catalog at once; the foreign key
  // alone would only forget the link and leave the name on every effect.
  await knex.raw(`
    create function forget_deleted_author() returns trigger language plpgsql as $$
    begin
      update authors set deleted_at = now(), name = null, avatar_key = null where user_id = old.id;
      return old;
    end $$`);
  await knex.raw('create trigger users_forget_deleted_author before delete on users for each row execute function forget_deleted_author()');

  await knex.schema.createTable('effects', (table) => {
    table.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    table.text('slug').notNullable().unique();
    table.text('name_ru').notNullable();
    table.text('name_en').notNullable();
    table.text('description_ru').notNullable().defaultTo('');
    table.text('description_en').notNullable().defaultTo('');
    table.integer('cost').notNullable();
    // [{min_photos, max_photos}] per person, in order.
    table.jsonb('characters').notNullable();
    table.text('output_type').notNullable().defaultTo('image');
    // The provider model it runs on (`image`, `video`, `sticker`, `safety`, `error` in the simulator).
    table.text('model').notNullable();
    // How many photos the model accepts in one generation; null: only `characters` limits them.
    table.integer('model_max_photos');
    table.uuid('author_id').references('id').inTable('authors').onDelete('RESTRICT');
    // The operator's curated order of the flat list.
    table.integer('position').notNullable().defaultTo(0);
    table.integer('success_count').notNullable().defaultTo(0);
    // Moderation: hidden effects are gone from everywhere; demoted ones sink to the end of every list.
    table.boolean('hidden').notNullable().defaultTo(false);
    table.timestamp('demoted_at', { useTz: true });
    // Catalog rule 1, kept by triggers (below): not hidden and in at least one enabled category.
    // Every list and count reads this one column instead of joining the categories again.
    table.boolean('listed').notNullable().defaultTo(false);
    // Previews, as object keys (URLs are made when an effect is shown, so a new storage address or
    // CDN needs no data change): the poster as uploaded is `preview_url` at once; `preview` (the
    // copies' keys and the poster's size and blurhash) appears when the copies are ready.
    table.text('poster_key').notNullable();
    table.text('preview_video_key');
    table.text('preview_animation_key');
    table.jsonb('preview');
    table.jsonb('focus');
    table.jsonb('video_focus');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`alter table effects
    add constraint effects_cost_not_negative check (cost >= 0),
    add constraint effects_output_type check (output_type in ('image', 'video')),
    add constraint effects_characters_shape check (jsonb_typeof(characters) = 'array' and jsonb_array_length(characters) between 1 and 4)`);
  // The flat list walks effects in curated order and stops after a page; its count is an index-only scan.
  await knex.raw('create index effects_curated_order on effects ((demoted_at is not null), position, created_at, id) where listed');
  await knex.raw('create index effects_author on effects (author_id, position) where author_id is not null');

  await knex.schema.createTable('effect_categories', (table) => {
    table.uuid('effect_id').notNullable().references('id').inTable('effects').onDelete('CASCADE');
    table.uuid('category_id').notNullable().references('id').inTable('categories').onDelete('CASCADE');
    // Order of the category among the effect's own categories (`category_ids`).
    table.integer('position').notNullable().defaultTo(0);
    // The operator's pins inside this category: rank among the pinned, lower first.
    table.integer('pinned_top');
    table.integer('pinned_bottom');
    // When the effect came into this category; recent ones compete for the new-effect slots.
    table.timestamp('new_since', { useTz: true });
    table.primary(['effect_id', 'category_id']);
  });
  await knex.raw('create index effect_categories_by_category on effect_categories (category_id, effect_id)');

  // `effects.listed` follows every change that can list or unlist an effect: its own `hidden`, its
  // links to categories, and a category being enabled or disabled. Statement-level triggers with
  // transition tables, so an import of thousands of links is one update, not one per row.
  await knex.raw(`
    create function listed_now(of_effect uuid, is_hidden boolean) returns boolean language sql stable as $$
      select not is_hidden and exists (
        select 1 from effect_categories ec join categories c on c.id = ec.category_id
        where ec.effect_id = of_effect and c.enabled)
    $$`);
  await knex.raw(`
    create function refresh_listed(effect_ids uuid[]) returns void language sql as $$
      update effects e set listed = listed_now(e.id, e.hidden) where e.id = any(effect_ids) and e.listed is distinct from listed_now(e.id, e.hidden)
    $$`);
  await knex.raw(`
    create function effects_set_listed() returns trigger language plpgsql as $$
    begin
      new.listed := listed_now(new.id, new.hidden);
      return new;
    end $$`);
  await knex.raw('create trigger effects_listed before insert or update of hidden on effects for each row execute function effects_set_listed()');
  await knex.raw(`
    create function links_refresh_listed() returns trigger language plpgsql as $$
    begin
      if tg_op in ('INSERT', 'UPDATE') then
        perform refresh_listed(array(select distinct effect_id from changed_new));
      end if;
      if tg_op in ('DELETE', 'UPDATE') then
        perform refresh_listed(array(select distinct effect_id from changed_old));
      end if;
      return null;
    end $$`);
  await knex.raw(`create trigger effect_categories_inserted after insert on effect_categories
    referencing new table as changed_new for each statement execute function links_refresh_listed()`);
  await knex.raw(`create trigger effect_categories_deleted after delete on effect_categories
    referencing old table as changed_old for each statement execute function links_refresh_listed()`);
  await knex.raw(`create trigger effect_categories_updated after update on effect_categories
    referencing old table as changed_old new table as changed_new for each statement execute function links_refresh_listed()`);
  await knex.raw(`
    create function category_refresh_listed() returns trigger language plpgsql as $$
    begin
      perform refresh_listed(array(select effect_id from effect_categories where category_id = new.id));
      return null;
    end $$`);
  await knex.raw(`create trigger categories_enabled after update of enabled on categories
    for each row when (old.enabled is distinct from new.enabled) execute function category_refresh_listed()`);

  await knex.schema.createTable('tags', (table) => {
    table.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    table.text('slug').notNullable().unique();
    table.text('name_ru').notNullable();
    table.text('name_en').notNullable();
  });
  await knex.raw("alter table tags add constraint tags_slug_latin_word check (slug ~ '^[a-z]+$')");

  await knex.schema.createTable('effect_tags', (table) => {
    table.uuid('effect_id').notNullable().references('id').inTable('effects').onDelete('CASCADE');
    table.uuid('tag_id').notNullable().references('id').inTable('tags').onDelete('CASCADE');
    table.integer('position').notNullable().defaultTo(0);
    table.primary(['effect_id', 'tag_id']);
  });
  await knex.raw('create index effect_tags_by_tag on effect_tags (tag_id, effect_id)');

  await knex.schema.createTable('complaints', (table) => {
    table.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    table.uuid('effect_id').notNullable().references('id').inTable('effects').onDelete('CASCADE');
    table.uuid('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    table.text('reason').notNullable();
    table.text('note');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('resolved_at', { useTz: true });
  });
  await knex.raw("alter table complaints add constraint complaints_reason check (reason in ('unsafe', 'my_face', 'brand', 'quality', 'other'))");
  // One open case per person and effect: a repeat counts once until a moderator resolves it.
  await knex.raw('create unique index complaints_one_open_per_user on complaints (effect_id, user_id) where resolved_at is null');

  await knex.schema.createTable('author_views', (table) => {
    table.uuid('author_id').notNullable().references('id').inTable('authors').onDelete('CASCADE');
    table.uuid('viewer_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    table.date('day').notNullable();
    table.primary(['author_id', 'viewer_id', 'day']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('author_views');
  await knex.schema.dropTable('complaints');
  await knex.schema.dropTable('effect_tags');
  await knex.schema.dropTable('tags');
  await knex.schema.dropTable('effect_categories');
  await knex.raw('drop trigger categories_enabled on categories');
  await knex.raw('drop function links_refresh_listed(), category_refresh_listed()');
  await knex.schema.dropTable('effects');
  await knex.raw('drop function effects_set_listed(), refresh_listed(uuid[]), listed_now(uuid, boolean)');
  await knex.raw('drop trigger users_forget_deleted_author on users');
  await knex.raw('drop function forget_deleted_author()');
  await knex.schema.dropTable('authors');
  await knex.schema.dropTable('categories');
}
