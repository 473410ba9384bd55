import type { Knex } from 'knex';

/**
 * The provider is still working: the next poll comes after 1/15 of the time the task has run so
 * far, between `minMs` and `maxMs` (every ~100 ms in the first seconds, then slower, capped), so the
 * delay in noticing a finished task stays near 3% of its run on average (7% at worst); the poll
 * claim ends with it; after `minMs` only once the provider called back that the task finished
 * (`task_callback_at`: it came while this poll was under way, after the provider answered
 * "running"). Guarded by the status.
 */
export async function schedulePoll(db: Knex, generationId: string, minMs: number, maxMs: number): Promise<void> {
  await db.raw(
    `update generations
     set next_poll_at = now() + case when task_callback_at is not null then :minMs
         else least(:maxMs, greatest(:minMs, extract(epoch from now() - started_at) * 1000 / 15)) end * interval '1 millisecond',
       claimed_by = null
     where id = :generationId and status = 'processing' and result_stored_at is null`,
    { generationId, minMs, maxMs },
  );
}
