import type { Knex } from 'knex';

/**
 * The circuits towards outside services whose state every process shares (`common/circuit.ts`,
 * `db/circuits/`): one row per service, moved by compare-and-set on `version`. A missing row is a
 * closed circuit.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table circuits (
      name text primary key,
      state text not null check (state in ('closed', 'open', 'half_open')),
      failures integer not null,
      openings integer not null,
      retry_at timestamptz,
      version bigint not null
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table circuits');
}
