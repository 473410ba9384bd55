import Router from '@koa/router';
import type { Knex } from 'knex';
import { queueNames } from '../db/queues';
import type { Logger } from '../logger';
import type { ApiContext } from './http/context';
import { generationsFinished, generationTimeToTerminal, metricsRegistry, providerSlotsLeased, providerSlots, queueJobsDeferred, queueJobsWaiting, queueOldestJobAge, streamLeasesActive } from './metric-definitions';

/**
 * `GET /metrics` (outside /v1, no auth): Prometheus text. The database-backed values are read at
 * scrape time, each by one query that an index answers; concurrent scrapes share one refresh.
 */
export function metricsRouter(): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  const finished = new FinishedGenerations();
  let refreshing: Promise<void> | null = null;
  router.get('/metrics', async (ctx) => {
    const { db, log } = ctx.services;
    refreshing ??= refreshDatabaseMetrics(db, finished, log).finally(() => {
      refreshing = null;
    });
    await refreshing;
    ctx.type = metricsRegistry.contentType;
    ctx.body = await metricsRegistry.metrics();
  });
  return router;
}

async function refreshDatabaseMetrics(db: Knex, finished: FinishedGenerations, log: Logger): Promise<void> {
  const steps: [string, () => Promise<void>][] = [
    ['queues', () => refreshQueues(db)],
    ['provider slots', () => refreshProviderSlots(db)],
    ['stream leases', () => refreshStreamLeases(db)],
    ['finished generations', () => finished.collect(db)],
  ];
  for (const [name, step] of steps) {
    // A failing query leaves its gauges as they were; the rest of the exposition still answers.
    await step().catch((error) => log.warn({ err: error, metric: name }, 'metrics query failed'));
  }
}

/** Waiting, deferred and oldest-waiting per queue, from pg-boss's partial index of queued jobs. */
async function refreshQueues(db: Knex): Promise<void> {
  const { rows } = await db.raw<{ rows: { queue: string; waiting: number; deferred: number; oldest_age_s: number | null }[] }>(
    `select name as queue,
       count(*) filter (where start_after <= now()) as waiting,
       count(*) filter (where start_after > now()) as deferred,
       extract(epoch from now() - min(start_after) filter (where start_after <= now()))::float8 as oldest_age_s
     from pgboss.job where state < 'active' group by name`,
  );
  const byQueue = new Map(rows.map((row) => [row.queue, row]));
  for (const queue of new Set<string>([...queueNames, ...byQueue.keys()])) {
    const row = byQueue.get(queue);
    queueJobsWaiting.set({ queue }, row?.waiting ?? 0);
    queueJobsDeferred.set({ queue }, row?.deferred ?? 0);
    queueOldestJobAge.set({ queue }, Math.max(0, row?.oldest_age_s ?? 0));
  }
}

/** Leased and total slots per enabled provider account (by its non-secret label), from the pool's tables. */
async function refreshProviderSlots(db: Knex): Promise<void> {
  const { rows } = await db.raw<{ rows: { account: string; leased: number; slots: number }[] }>(
    `select a.label as account, a.slots,
       count(s.generation_id) filter (where s.lease_expires_at > now()) as leased
     from provider_accounts a left join provider_slots s on s.account_id = a.id
     where a.enabled group by a.id, a.label, a.slots`,
  );
  providerSlotsLeased.reset();
  providerSlots.reset();
  for (const row of rows) {
    providerSlotsLeased.set({ account: row.account }, row.leased);
    providerSlots.set({ account: row.account }, row.slots);
  }
}

async function refreshStreamLeases(db: Knex): Promise<void> {
  const { rows } = await db.raw<{ rows: { active: number }[] }>('select count(*) as active from stream_leases where expires_at > now()');
  streamLeasesActive.set(rows[0]?.active ?? 0);
}

/**
 * Finished generations as real Prometheus counters: each scrape reads the generations that became
 * terminal since the previous one (by `finished_at`, with an overlap for transactions that committed
 * late, and the ids already counted remembered for that overlap) and counts them. Every web process
 * counts every generation of the cluster since it started, like the gauges above: use `max`.
 */
class FinishedGenerations {
  private static readonly overlapS = 120;
  /** Counting starts with this process. */
  private since = new Date(Date.now() - process.uptime() * 1000);
  /** Ids counted within the overlap window, with their finish time (ms). */
  private counted = new Map<string, number>();

  async collect(db: Knex): Promise<void> {
    const { rows: [{ now }] } = await db.raw<{ rows: { now: Date }[] }>('select now() as now');
    const from = new Date(this.since.getTime() - FinishedGenerations.overlapS * 1000);
    const { rows } = await db.raw<{ rows: { id: string; status: string; error_code: string | null; finished_at: Date; seconds: number }[] }>(
      `select id, status, error_code, finished_at, extract(epoch from finished_at - created_at)::float8 as seconds
       from generations
       where finished_at > ? and finished_at <= ? and status in ('succeeded', 'failed')`,
      [from, now],
    );
    for (const row of rows) {
      if (this.counted.has(row.id)) continue;
      this.counted.set(row.id, row.finished_at.getTime());
      generationsFinished.inc({ status: row.status, error_code: row.error_code ?? '' });
      generationTimeToTerminal.observe({ status: row.status }, Math.max(0, row.seconds));
    }
    for (const [id, finishedAt] of this.counted) if (finishedAt <= from.getTime()) this.counted.delete(id);
    this.since = now;
  }
}
