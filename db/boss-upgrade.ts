import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { submitQueueOf } from './queues';

/** The one line of generations before provider kinds (pg-boss 10 and 12 alike). */
export const legacySubmitQueue = 'generation-submit';

/**
 * pg-boss 12 migrates schemas from version 25 on; pg-boss 10 left version 24 in every `.data/`
 * made before the upgrade. Such a schema is set aside under `legacySchema`, pg-boss 12 installs a
 * fresh one, and the jobs that still had work to do are copied across with their ids, creation
 * times and retry counts (a `generation-submit` job's place in the line is its `created_on`, and
 * its id is named by the generation row; every generation then ran on the simulator, so its ticket
 * goes to `generation-submit.simulator`). Jobs a stopped process held `active` go back to `retry`.
 *
 * Each step can be repeated after a crash: the copy and the drop of the legacy schema are one
 * transaction, and a legacy schema left behind is picked up by the next start. A session advisory
 * lock keeps two processes starting together from doing it twice.
 */
export const firstSupportedSchemaVersion = 25;
export const legacySchema = 'pgboss_v10';
const upgradeLock = "hashtext('effects-backend:pg-boss-upgrade')";

export interface SchemaUpgrade {
  /** Jobs copied from the legacy schema, or null when there was nothing to upgrade. */
  copiedJobs: number | null;
}

export async function withBossSchemaUpgrade(url: string, schema: string, start: () => Promise<PgBoss>): Promise<{ boss: PgBoss } & SchemaUpgrade> {
  const client = new pg.Client({ connectionString: url, application_name: 'effects-backend-boss-upgrade' });
  await client.connect();
  try {
    await client.query(`select pg_advisory_lock(${upgradeLock})`);
    const version = await schemaVersion(client, schema);
    if (version !== null && version < firstSupportedSchemaVersion) {
      await client.query(`alter schema ${schema} rename to ${legacySchema}`);
    }
    const boss = await start();
    if (!(await schemaExists(client, legacySchema))) return { boss, copiedJobs: null };
    return { boss, copiedJobs: await copyUnfinishedJobs(client, schema) };
  } finally {
    await client.query(`select pg_advisory_unlock(${upgradeLock})`).catch(() => undefined);
    await client.end();
  }
}

async function schemaExists(client: pg.Client, schema: string): Promise<boolean> {
  const { rows } = await client.query('select 1 from pg_namespace where nspname = $1', [schema]);
  return rows.length > 0;
}

async function schemaVersion(client: pg.Client, schema: string): Promise<number | null> {
  const { rows } = await client.query('select to_regclass($1) as version_table', [`${schema}.version`]);
  if (!rows[0].version_table) return null;
  const version = await client.query(`select version from ${schema}.version`);
  return version.rows.length ? Number(version.rows[0].version) : null;
}

/** Copies the created, retry and active jobs of queues that exist in the new schema, then drops the old one. */
async function copyUnfinishedJobs(client: pg.Client, schema: string): Promise<number> {
  await client.query('begin');
  try {
    const copied = await client.query(`
      insert into ${schema}.job (id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
                                 expire_seconds, singleton_key, start_after, created_on, keep_until, policy)
      select old.id, queue.name, old.priority, old.data,
             (case when old.state::text = 'active' then 'retry' else old.state::text end)::${schema}.job_state,
             old.retry_limit, old.retry_count, old.retry_delay, old.retry_backoff,
             greatest(1, extract(epoch from old.expire_in)::int), old.singleton_key, old.start_after, old.created_on,
             old.keep_until, queue.policy
        from ${legacySchema}.job old
        join ${schema}.queue queue on queue.name = (case when old.name = '${legacySubmitQueue}' then '${submitQueueOf('simulator')}' else old.name end)
       where old.state in ('created', 'retry', 'active')
      on conflict do nothing`);
    await client.query(`drop schema ${legacySchema} cascade`);
    await client.query('commit');
    return copied.rowCount ?? 0;
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}
