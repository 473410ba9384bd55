import type { Knex } from 'knex';

/** Keeps the generation's slot for another `leaseS` (called at every poll); nothing when it holds none. */
export async function renewLease(db: Knex, generationId: string, leaseS: number): Promise<number> {
  return db('provider_slots')
    .where({ generation_id: generationId })
    .update({ lease_expires_at: db.raw("now() + ? * interval '1 second'", [leaseS]) });
}
