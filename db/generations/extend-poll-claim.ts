import type { Knex } from 'knex';

/** Keeps the poll claim while a long step (downloading a result) runs. Guarded by the status. */
export async function extendPollClaim(db: Knex, generationId: string, seconds: number): Promise<void> {
  await db.raw(
    "update generations set next_poll_at = now() + :seconds * interval '1 second' where id = :generationId and status = 'processing' and result_stored_at is null",
    { generationId, seconds },
  );
}
