import type { Knex } from 'knex';
import { bossSchema } from '../boss';

/**
 * Up to `limit` active `generation-media` jobs nobody touched within their heartbeat: the media
 * process that fetched one died, hangs, or never got the answer to its fetch (the database went
 * away just then). pg-boss's own supervision fails them too, but only once a minute.
 */
export async function findSilentPreviewJobs(db: Knex, limit: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select id from ${bossSchema}.job
     where name = 'generation-media' and state = 'active' and heartbeat_seconds is not null
       and heartbeat_on + heartbeat_seconds * interval '1 second' < now()
     limit :limit`,
    { limit },
  );
  return rows.map((row) => row.id);
}
