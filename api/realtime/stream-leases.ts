import type { Knex } from 'knex';

/**
 * Stream slots as leases in Postgres (table `stream_leases`), so the per-user cap holds across all
 * web processes. A lease counts while its process is alive: each web process that holds streams
 * renews its one row in `stream_processes` with its heartbeat, so a process that died frees all its
 * slots when that row lapses, and a heartbeat costs one row however many streams it holds.
 */
export interface LeaseRequest {
  id: string;
  userId: string;
  processId: string;
  kind: string;
  objectId: string;
}

/**
 * Takes a slot unless the user already holds `cap` live ones: the lease's id as Postgres returns it,
 * or null when over the cap. Two opens of one user on two processes must not both see "cap - 1": a
 * transaction-scoped advisory lock per user orders them, and the count runs in a statement that
 * starts after the lock is held (under READ COMMITTED a statement's snapshot is taken when the
 * statement starts, so it sees the other insert).
 */
export async function acquireStreamLease(db: Knex, lease: LeaseRequest, settings: { cap: number; leaseS: number }): Promise<string | null> {
  return db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtext('stream_leases'), hashtext(?))", [lease.userId]);
    // The process's first slot also makes its row (the heartbeat renews it from then on); nothing
    // happens to a row that exists, so concurrent opens never wait for each other on it. The count
    // cannot see a row made by the same statement: it can only miss slots of this process while
    // the process has none counted yet.
    const { rows } = await trx.raw<{ rows: { id: string }[] }>(
      `with process as (
         insert into stream_processes (id, expires_at) values (:processId, now() + :leaseS * interval '1 second')
         on conflict (id) do nothing
       )
       insert into stream_leases (id, user_id, process_id, kind, object_id)
       select :id, :userId, :processId, :kind, :objectId
       where (select count(*) from stream_leases l join stream_processes p on p.id = l.process_id
              where l.user_id = :userId and p.expires_at > now()) < :cap
       returning id`,
      { ...lease, cap: settings.cap, leaseS: settings.leaseS },
    );
    return rows[0]?.id ?? null;
  });
}

export async function releaseStreamLease(db: Knex, id: string): Promise<void> {
  await db.raw('delete from stream_leases where id = ?', [id]);
}

/**
 * The heartbeat of one process: extends its own row; deletes `unreleased`, its leases whose release
 * failed (the database was away); and drops every process that lapsed a while ago, whoever it was,
 * with its leases.
 */
export async function renewStreamProcess(db: Knex, processId: string, leaseS: number, unreleased: string[] = []): Promise<void> {
  await db.raw(
    `with renewed as (
       insert into stream_processes (id, expires_at) values (:processId, now() + :leaseS * interval '1 second')
       on conflict (id) do update set expires_at = excluded.expires_at
     ), lapsed as (
       delete from stream_processes where expires_at < now() - interval '1 minute' and id <> :processId
       returning id
     )
     delete from stream_leases
     where process_id in (select id from lapsed) or (process_id = :processId and id = any(:unreleased::uuid[]))`,
    { processId, leaseS, unreleased },
  );
}

/**
 * The heartbeat stops when the process holds no stream: its row goes too, unless a slot was taken
 * meanwhile (the next slot makes the row afresh, where a lapsed row would not count it).
 */
export async function retireStreamProcess(db: Knex, processId: string): Promise<void> {
  await db.raw(
    'delete from stream_processes where id = :processId and not exists (select from stream_leases where process_id = :processId)',
    { processId },
  );
}

/** At shutdown: this process's streams are all ending. */
export async function releaseProcessStreamLeases(db: Knex, processId: string): Promise<void> {
  await db.raw(
    `with released as (delete from stream_leases where process_id = :processId)
     delete from stream_processes where id = :processId`,
    { processId },
  );
}
