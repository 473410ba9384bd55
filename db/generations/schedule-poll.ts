import type { Knex } from 'knex';
import { commitWithoutFlush } from '../commit-without-flush';

/**
 * The provider is still working: the next poll comes after 1/15 of the time the task has run so
 * far, between `minMs` and `maxMs` (every ~100 ms in the first seconds, then slower, capped), so the
 * delay in noticing a finished task stays near 3% of its run on average (7% at worst); the poll
 * claim ends with it; after `minMs` only once the provider called back that the task finished
 * (`task_callback_at`: it came while this poll was under way, after the provider answered
 * "running"). The generation's slot, when it holds one, is kept for another `leaseS`. Guarded by
 * the status.
 *
 * One statement, whose commit does not wait for the disk (`commit-without-flush.ts`): a schedule
 * lost in a crash of Postgres only brings the poll sooner, and that poll renews the lease again,
 * long before it runs out.
 */
export async function schedulePoll(db: Knex, generationId: string, timing: { minMs: number; maxMs: number; leaseS: number }): Promise<void> {
  await db.raw(
    `with scheduled as (
       update generations
       set next_poll_at = now() + case when task_callback_at is not null then :minMs
           else least(:maxMs, greatest(:minMs, extract(epoch from now() - started_at) * 1000 / 15)) end * interval '1 millisecond',
         claimed_by = null
       from (select ${commitWithoutFlush}) as commit_without_flush
       where id = :generationId and status = 'processing' and result_stored_at is null
       returning id
     )
     update provider_slots set lease_expires_at = now() + :leaseS * interval '1 second'
     where generation_id in (select id from scheduled)`,
    { generationId, ...timing },
  );
}
