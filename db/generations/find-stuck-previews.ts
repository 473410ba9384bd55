import type { Knex } from 'knex';

/** Up to `limit` stored results still without a preview `timeoutS` after they were stored, oldest first. */
export async function findStuckPreviews(db: Knex, timeoutS: number, limit: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select id from generations
     where status = 'processing' and result_stored_at < now() - :timeoutS * interval '1 second'
     order by result_stored_at limit :limit`,
    { timeoutS, limit },
  );
  return rows.map((row) => row.id);
}
