import type { Knex } from 'knex';
import {
  creditTransactions, generationsFinished, generationTimeToTerminal, paymentsOldestOpenAge, paymentsOpen,
  paymentStatusChanges, subscriptionClockLag, subscriptionsLive,
} from './metric-definitions';
import { liveStatuses } from '../db/subscriptions/model';

/**
 * What became of generations, their charges and payments, as Prometheus counters read from the
 * database at scrape time. These events happen in any process (a worker fails and refunds a
 * generation, the scheduler reconciles a payment) while only web processes serve `/metrics`, so
 * each scrape reads the rows whose timestamp passed since the previous one (with an overlap for
 * transactions that committed late, remembering what it counted within it) and counts them. Every
 * web process counts every event of the cluster since it started: aggregate with `max`, not `sum`.
 * Each read is a range scan of a partial or plain index on its timestamp (migrations
 * `…generations_finished_index`, `…metrics_indexes`).
 */
interface CountedRow {
  /** Counted once per key. */
  key: string;
  at: Date;
}

type Step = [name: string, run: () => Promise<void>];

class RowsSinceLastScrape<Row extends CountedRow> {
  private static readonly overlapS = 120;
  /** Counting starts with this process. */
  private since = new Date(Date.now() - process.uptime() * 1000);
  /** Keys counted within the overlap window, with their time (ms). */
  private counted = new Map<string, number>();

  constructor(
    private readonly read: (db: Knex, from: Date, to: Date) => Promise<Row[]>,
    private readonly count: (row: Row) => void,
  ) {}

  async collect(db: Knex): Promise<void> {
    const { rows: [{ now }] } = await db.raw<{ rows: { now: Date }[] }>('select now() as now');
    const from = new Date(this.since.getTime() - RowsSinceLastScrape.overlapS * 1000);
    for (const row of await this.read(db, from, now)) {
      if (this.counted.has(row.key)) continue;
      this.counted.set(row.key, row.at.getTime());
      this.count(row);
    }
    for (const [key, at] of this.counted) if (at <= from.getTime()) this.counted.delete(key);
    this.since = now;
  }
}

async function rowsOf<Row>(db: Knex, sql: string, from: Date, to: Date): Promise<Row[]> {
  return (await db.raw<{ rows: Row[] }>(sql, [from, to])).rows;
}

/** Generations that became terminal, by status and error code, and their time to terminal. */
const finishedGenerations = () => new RowsSinceLastScrape<CountedRow & { status: string; error_code: string | null; seconds: number }>(
  (db, from, to) => rowsOf(db, `select id as key, finished_at as at, status, error_code,
       extract(epoch from finished_at - created_at)::float8 as seconds
     from generations
     where finished_at > ? and finished_at <= ? and status in ('succeeded', 'failed')`, from, to),
  (row) => {
    generationsFinished.inc({ status: row.status, error_code: row.error_code ?? '' });
    generationTimeToTerminal.observe({ status: row.status }, Math.max(0, row.seconds));
  },
);

/** Generation charges and their refunds, from the ledger. */
const chargesAndRefunds = () => new RowsSinceLastScrape<CountedRow & { kind: string }>(
  (db, from, to) => rowsOf(db, `select id::text as key, created_at as at, kind
     from credit_transactions
     where kind in ('reserve', 'refund') and created_at > ? and created_at <= ?`, from, to),
  (row) => creditTransactions.inc({ kind: row.kind }),
);

/**
 * Payments by the status they reached: each (payment, status) once. A payment that changed twice
 * between two scrapes is seen in its later status only.
 */
const paymentStatuses = () => new RowsSinceLastScrape<CountedRow & { status: string }>(
  (db, from, to) => rowsOf(db, `select id || ':' || status as key, status_changed_at as at, status
     from payments
     where status_changed_at > ? and status_changed_at <= ?`, from, to),
  (row) => paymentStatusChanges.inc({ status: row.status }),
);

async function refreshOpenPayments(db: Knex): Promise<void> {
  const { rows: [row] } = await db.raw<{ rows: { open: number; oldest_age_s: number | null }[] }>(
    `select count(*)::int as open, extract(epoch from now() - min(created_at))::float8 as oldest_age_s
     from payments where status = 'created'`,
  );
  paymentsOpen.set(row?.open ?? 0);
  paymentsOldestOpenAge.set(Math.max(0, row?.oldest_age_s ?? 0));
}

/** Live subscriptions by status, and how late the clock is (the partial index on `next_action_at`). */
async function refreshSubscriptions(db: Knex): Promise<void> {
  const { rows } = await db.raw<{ rows: { status: string; count: number }[] }>(
    "select status, count(*)::int as count from subscriptions where status in ('pending', 'active', 'past_due') group by status",
  );
  for (const status of liveStatuses) subscriptionsLive.set({ status }, rows.find((row) => row.status === status)?.count ?? 0);
  const { rows: [lag] } = await db.raw<{ rows: { seconds: number | null }[] }>(
    'select extract(epoch from now() - min(next_action_at))::float8 as seconds from subscriptions where next_action_at <= now()',
  );
  subscriptionClockLag.set(Math.max(0, lag?.seconds ?? 0));
}

/** The scrape-time steps of these metrics, each failing on its own. One instance per metrics router. */
export class OutcomeMetrics {
  private readonly generations = finishedGenerations();
  private readonly ledger = chargesAndRefunds();
  private readonly payments = paymentStatuses();

  steps(db: Knex): Step[] {
    return [
      ['finished generations', () => this.generations.collect(db)],
      ['charges and refunds', () => this.ledger.collect(db)],
      ['payment statuses', () => this.payments.collect(db)],
      ['open payments', () => refreshOpenPayments(db)],
      ['subscriptions', () => refreshSubscriptions(db)],
    ];
  }
}
