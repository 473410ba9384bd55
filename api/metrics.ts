import Router from '@koa/router';
import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../common/logger';
import { freeSlot } from '../db/pool/free-slot';
import type { ApiContext } from './http/context';
import {
  metricsRegistry, providerSlotsLeased, providerSlots, queueJobsDeferred, queueJobsWaiting, queueOldestJobAge,
  streamLeasesActive,
} from './metric-definitions';
import { metricsAccess } from './metrics-access';
import { OutcomeMetrics } from './metrics-outcomes';
import { readQueueSizes } from '../db/queue-sizes';

/**
 * `GET /metrics` (outside /v1; open unless METRICS_TOKEN is set, on the main port unless
 * METRICS_PORT moves it to a listener of its own, `metrics-server.ts`): Prometheus text. The database-backed values are read at
 * scrape time, each by one query that an index answers; concurrent scrapes share one refresh.
 */
export function metricsRouter(): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  const outcomes = new OutcomeMetrics();
  let refreshing: Promise<void> | null = null;
  router.get('/metrics', metricsAccess(), async (ctx) => {
    const { db, boss, log } = ctx.services;
    refreshing ??= refreshDatabaseMetrics(db, boss, outcomes, log).finally(() => {
      refreshing = null;
    });
    await refreshing;
    ctx.type = metricsRegistry.contentType;
    ctx.body = await metricsRegistry.metrics();
  });
  return router;
}

async function refreshDatabaseMetrics(db: Knex, boss: PgBoss, outcomes: OutcomeMetrics, log: Logger): Promise<void> {
  const steps: [string, () => Promise<void>][] = [
    ['queues', () => refreshQueues(db, boss)],
    ['provider slots', () => refreshProviderSlots(db)],
    ['stream leases', () => refreshStreamLeases(db)],
    ...outcomes.steps(db),
  ];
  for (const [name, step] of steps) {
    // A failing query leaves its gauges as they were; the rest of the exposition still answers.
    await step().catch((error) => log.warn({ err: error, metric: name }, 'metrics query failed'));
  }
}

async function refreshQueues(db: Knex, boss: PgBoss): Promise<void> {
  for (const size of await readQueueSizes(db, boss)) {
    queueJobsWaiting.set({ queue: size.queue }, size.waiting);
    queueJobsDeferred.set({ queue: size.queue }, size.deferred);
    queueOldestJobAge.set({ queue: size.queue }, size.oldest_age_s);
  }
}

/** Leased and total slots per enabled provider account (by its non-secret label), from the pool's tables. */
async function refreshProviderSlots(db: Knex): Promise<void> {
  const { rows } = await db.raw<{ rows: { account: string; leased: number; slots: number }[] }>(
    `select a.label as account, a.slots,
       count(s.account_id) filter (where not ${freeSlot('s')} and s.slot_no < a.slots) as leased
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
  const { rows } = await db.raw<{ rows: { active: number }[] }>(`select count(*) as active from stream_leases l join stream_processes p on p.id = l.process_id
     where p.expires_at > now()`);
  streamLeasesActive.set(rows[0]?.active ?? 0);
}
