import type { Knex } from 'knex';
import type { GenerationRow } from './model';

export type InputCheck = Pick<GenerationRow, 'id' | 'inputs' | 'provider_kind'>;

/**
 * Takes the oldest waiting generations whose photos nobody checked yet, for `claimS`, with
 * `for update skip locked` so workers checking ahead never take the same one. Skips those a
 * dispatcher is submitting (it checks them itself).
 */
export async function claimInputChecks(db: Knex, limit: number, claimS: number): Promise<InputCheck[]> {
  if (limit <= 0) return [];
  const { rows } = await db.raw<{ rows: InputCheck[] }>(
    `with next as materialized (
       select id from generations
       where status = 'pending' and inputs_checked_at is null and dispatch_until is null
         and (checking_until is null or checking_until < now())
       order by created_at
       limit :limit
       for update skip locked
     )
     update generations g set checking_until = now() + :claimS * interval '1 second'
     from next where g.id = next.id
     returning g.id, g.inputs, g.provider_kind`,
    { limit, claimS },
  );
  return rows;
}
