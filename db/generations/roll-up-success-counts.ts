import type { Knex } from 'knex';

/**
 * Moves up to `batch` success tallies (migration `effect_success_tallies`) into their effects'
 * `success_count`, in one statement: each tally is deleted and counted exactly once, also when
 * several schedulers roll up at the same moment (they skip each other's locked tallies). A
 * success count bumps no catalog version. Answers how many tallies were taken.
 */
export async function rollUpSuccessCounts(db: Knex, batch: number): Promise<number> {
  const { rows: [row] } = await db.raw<{ rows: { tallies: number }[] }>(
    `with taken as (
       delete from effect_success_tallies where id in (
         select id from effect_success_tallies order by id limit :batch for update skip locked)
       returning effect_id
     ),
     counted as (select effect_id, count(*)::integer as successes from taken group by effect_id),
     added as (
       update effects e set success_count = e.success_count + counted.successes
       from counted where e.id = counted.effect_id
     )
     select (select count(*)::integer from taken) as tallies`,
    { batch },
  );
  return row.tallies;
}

/**
 * A success of each generation `source` names with an effect (`effect_id`), in the statement of the
 * success (`succeed-generation.ts`): a row of its own, so no success waits for another.
 */
export function tallySuccessesOf(source: string): string {
  return `insert into effect_success_tallies (effect_id) select effect_id from ${source} where effect_id is not null`;
}
