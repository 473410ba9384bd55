import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { quantity } from '../../common/plural';
import { html } from '../../media/pages/html';
import { readQueueSizes } from '../../db/queue-sizes';
import { awaitingReplay, failureWindowS } from './failures';
import { readMarketplaceFigures, slowModerationS } from './marketplace';
import { readOpenPayments } from './payments';
import { readPool } from './pool';
import { consolePage } from './view';

/** The console's first page: one figure per page, each a link to it. */
export interface Overview {
  slotsLeased: number;
  slots: number;
  coolingAccounts: number;
  jobsWaiting: number;
  failedNotReplayed: number;
  paymentsOpen: number;
  moderationWaiting: number;
  moderationSlow: number;
}

export async function readOverview(db: Knex, boss: PgBoss): Promise<Overview> {
  const [pool, failed, queues, payments, marketplace] = await Promise.all([
    readPool(db),
    db.raw<{ rows: { count: number }[] }>(
      `select count(*)::int as count from generations
       where status = 'failed' and finished_at > now() - :window * interval '1 second' and ${awaitingReplay}`,
      { window: failureWindowS },
    ),
    readQueueSizes(db, boss),
    readOpenPayments(db),
    readMarketplaceFigures(db),
  ]);
  const accounts = pool.filter((account) => account.enabled);
  return {
    slotsLeased: accounts.reduce((sum, account) => sum + account.leased, 0),
    slots: accounts.reduce((sum, account) => sum + account.slots, 0),
    coolingAccounts: accounts.filter((account) => account.cooldown_until).length,
    jobsWaiting: queues.reduce((sum, queue) => sum + queue.waiting, 0),
    failedNotReplayed: failed.rows[0].count,
    paymentsOpen: payments.total,
    moderationWaiting: marketplace.waiting,
    moderationSlow: marketplace.slow,
  };
}

export function overviewPage(overview: Overview): string {
  return consolePage('/ops', 'Overview', html`<div class="figures">
<a class="figure" href="/ops/pool"><strong id="overview-slots">${overview.slotsLeased} / ${overview.slots}</strong>provider slots leased${overview.coolingAccounts ? `, ${quantity(overview.coolingAccounts, 'account')} cooling down` : ''}</a>
<a class="figure" href="/ops/activity"><strong id="overview-waiting">${overview.jobsWaiting}</strong>jobs waiting in the queues</a>
<a class="figure${overview.failedNotReplayed ? ' bad' : ''}" href="/ops/failed"><strong id="overview-failed">${overview.failedNotReplayed}</strong>failed generations not replayed (24 h)</a>
<a class="figure${overview.paymentsOpen ? ' bad' : ''}" href="/ops/payments"><strong id="overview-payments">${overview.paymentsOpen}</strong>payments that need attention</a>
<a class="figure${overview.moderationSlow ? ' bad' : ''}" href="/ops/marketplace"><strong id="overview-moderation">${overview.moderationWaiting}</strong>user effects waiting for moderation${overview.moderationSlow ? `, ${overview.moderationSlow} longer than ${slowModerationS / 60} min` : ''}</a>
</div>
<p class="hint">Metrics for dashboards and alerts: <span class="mono">GET /metrics</span> (docs/monitoring). Jobs one by one: <a href="/ops/queues">the pg-boss dashboard</a>.</p>`);
}
