import type { Knex } from 'knex';

/**
 * processing (polled by a dead process) -> processing (due now): the poll claims of processes whose
 * session is gone are given back at once instead of when they run out. Answers how many.
 */
export async function releaseDeadPollClaims(db: Knex): Promise<number> {
  const released = await db.raw<{ rowCount: number }>(
    `update generations set next_poll_at = now(), claimed_by = null
     where status = 'processing' and result_stored_at is null and claimed_by is not null and not process_is_alive(claimed_by)`,
  );
  return released.rowCount;
}
