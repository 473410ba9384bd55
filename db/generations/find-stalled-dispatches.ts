import type { Knex } from 'knex';

/** Up to `limit` pending generations whose submission claim ran out (a worker died or stalled), oldest first. */
export async function findStalledDispatches(db: Knex, limit: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    "select id from generations where status = 'pending' and dispatch_until < now() order by created_at limit :limit",
    { limit },
  );
  return rows.map((row) => row.id);
}
