import type { Knex } from 'knex';

/**
 * Stream slots as leases in Postgres (table `stream_leases`), so the per-user cap holds across all
 * web processes. Only unexpired leases count: a lease of a process that died lapses by itself.
 */
export interface LeaseRequest {
  id: string;
  userId: string;
  processId: string;
  kind: string;
  objectId: string;
}

/**
 * Takes a slot unless the user already holds `cap` live ones; false when over the cap. Two opens of
 * one user on two processes must not both see "cap - 1": a transaction-scoped advisory lock per user
 * orders them, and the count runs in a statement that starts after the lock is held (under READ
 * COMMITTED a statement's snapshot is taken when the statement starts, so it sees the other insert).
 */
export async function acquireStreamLease(db: Knex, lease: LeaseRequest, settings: { cap: number; leaseS: number }): Promise<boolean> {
  return db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtext('stream_leases'), hashtext(?))", [lease.userId]);
    const { rows } = await trx.raw<{ rows: unknown[] }>(
      `insert into stream_leases (id, user_id, process_id, kind, object_id, expires_at)
       select :id, :userId, :processId, :kind, :objectId, now() + :leaseS * interval '1 second'
       where (select count(*) from stream_leases where user_id = :userId and expires_at > now()) < :cap
       returning id`,
      { ...lease, cap: settings.cap, leaseS: settings.leaseS },
    );
    return rows.length === 1;
  });
}

export async function releaseStreamLease(db: Knex, id: string): Promise<void> {
  await db.raw('delete from stream_leases where id = ?', [id]);
}

/**
 * The heartbeat of one process: extends its live leases, and drops its other rows (a release that
 * failed while the database was away) and every lease that lapsed a while ago, whoever held it.
 */
export async function renewStreamLeases(db: Knex, processId: string, liveIds: string[], leaseS: number): Promise<void> {
  await db.raw(
    // Two statements in one: the delete never touches a row the update renews.
    `with renewed as (
       update stream_leases set expires_at = now() + :leaseS * interval '1 second'
       where process_id = :processId and id = any(:ids::uuid[])
     )
     delete from stream_leases
     where not (process_id = :processId and id = any(:ids::uuid[]))
       and (process_id = :processId or expires_at < now() - interval '1 minute')`,
    { processId, ids: liveIds, leaseS },
  );
}

/** At shutdown: this process's streams are all ending. */
export async function releaseProcessStreamLeases(db: Knex, processId: string): Promise<void> {
  await db.raw('delete from stream_leases where process_id = ?', [processId]);
}
