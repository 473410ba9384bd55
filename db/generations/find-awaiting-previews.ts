import type { Knex } from 'knex';

export interface AwaitingPreview {
  id: string;
  /** Its `generation-media` job; null on results stored before the row named its job. */
  media_job_id: string | null;
  result_stored_at: Date;
}

/**
 * Up to `limit` stored results still waiting for their preview, oldest first (through the index of
 * results awaiting media): what the sweeps look at, each with its job as pg-boss answers it.
 */
export async function findAwaitingPreviews(db: Knex, limit: number): Promise<AwaitingPreview[]> {
  const { rows } = await db.raw<{ rows: AwaitingPreview[] }>(
    `select id, media_job_id, result_stored_at from generations
     where status = 'processing' and result_key is not null and result_stored_at is not null
     order by result_stored_at limit :limit`,
    { limit },
  );
  return rows;
}
