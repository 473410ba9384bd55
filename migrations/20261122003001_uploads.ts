import type { Knex } from 'knex';

/**
 * Photo uploads (docs/mobile.md): the row is the ticket, the object in storage is the file.
 * An upload counts as completed once its object exists; that and the 15 MB cap are checked when the
 * upload is used, because the embedded S3 server does not enforce POST policies.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table uploads (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      object_key text not null unique,
      content_type text not null,
      created_at timestamptz not null default now()
    )`);
  await knex.raw('create index uploads_user on uploads (user_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('uploads');
}
