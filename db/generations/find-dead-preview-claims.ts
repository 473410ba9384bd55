import type { Knex } from 'knex';

export interface DeadPreviewClaim {
  id: string;
  claimed_by: string;
  media_job_id: string | null;
}

/** Up to `limit` previews being built by a process whose session is gone (a media process that died mid-preview). */
export async function findDeadPreviewClaims(db: Knex, limit: number): Promise<DeadPreviewClaim[]> {
  const { rows } = await db.raw<{ rows: DeadPreviewClaim[] }>(
    `select id, claimed_by, media_job_id from generations
     where status = 'processing' and result_stored_at is not null and claimed_by is not null and not process_is_alive(claimed_by)
     limit :limit`,
    { limit },
  );
  return rows;
}
