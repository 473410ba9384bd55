import type { Knex } from 'knex';
import { bossSchema } from '../boss';

/**
 * Up to `limit` stored results whose preview will not come, oldest first: their `generation-media`
 * job gave up (every try failed, or it is gone), or it has been ready to run for `timeoutS` without
 * any media process taking it (the media role is down). A job being built or waiting for its next
 * try is never given up on. Results stored before the row named its job keep the old rule: stored
 * longer than `timeoutS` ago.
 */
export async function findStuckPreviews(db: Knex, timeoutS: number, limit: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select g.id from generations g
     left join ${bossSchema}.job j on j.name = 'generation-media' and j.id = g.media_job_id
     where g.status = 'processing' and g.result_stored_at is not null
       and case
         when g.media_job_id is null then g.result_stored_at < now() - :timeoutS * interval '1 second'
         when j.id is null then true
         when j.state in ('created', 'retry') then j.start_after < now() - :timeoutS * interval '1 second'
         else j.state <> 'active'
       end
     order by g.result_stored_at limit :limit`,
    { timeoutS, limit },
  );
  return rows.map((row) => row.id);
}
