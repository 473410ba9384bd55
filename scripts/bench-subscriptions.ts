import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pLimit from 'p-limit';
import type { Knex } from 'knex';
import { checkOrder } from '../services/payments/check-order';
import { orderRegistrationOf } from '../services/payments/order-registration';
import { ProcessorClient } from '../clients/payment-processor/client';
import type { PaymentRow } from '../db/payments/model';
import { recordRegistration } from '../db/payments/record-registration';
import { insertPendingSubscription } from '../db/subscriptions/insert-pending';
import type { PlanRow } from '../db/subscriptions/model';
import { seedSubscriptionPlans } from '../db/subscriptions/seed-plans';
import { startWeb } from '../api/web';
import { paymentProcessorOf } from '../services/payments/payment-processor';
import { freeLoopbackPort } from '../db/postgres';
import type { ScratchStack } from '../process/scratch-stack';
import type { Services } from '../services';
import { eventually } from './wait';
import { pgBossThroughput } from './bench-pg-boss';
import { startRole } from './bench-processes';
import { runBench } from './bench-runner';
import { postgresCpuMs, processCpuMs } from './load';

/**
 * `node dist/scripts/bench-subscriptions.js [--count 10000] [--schedulers 2] [--workers 2]`
 *
 * Renewals at scale: `count` active subscriptions, each with a card saved at the processor, all due
 * at the same moment; the scheduler processes' clocks burn and start each renewal, the worker
 * processes charge the cards server-to-server and apply the outcomes; the processor simulator
 * (zero latency) is mounted on the bench's own web app, which also takes its notifications. Prints renewals per
 * second, the time until the last one was done, and double charges (must be 0), beside raw pg-boss
 * throughput on the same database as the baseline (these machines are noisy: compare ratios).
 */
export interface SubscriptionBenchOptions {
  count: number;
  schedulers: number;
  workers: number;
}

export interface SubscriptionBenchResult {
  pgBossJobsPerSecond: number;
  count: number;
  setupSeconds: number;
  renewed: number;
  lastDoneSeconds: number;
  renewalsPerSecond: number;
  doubleCharges: number;
  extraAttempts: number;
  /** CPU ms per renewal, from the moment they fell due until the last was done, by process role. */
  cpuMsPerRenewal: { schedulers: number; workers: number; webAndSimulator: number; postgres: number };
  /** Statements and transactions per renewal, when the database has `pg_stat_statements` loaded. */
  statementsPerRenewal: { statements: number; transactions: number; top: { calls: number; query: string }[] } | null;
}

/** Resets `pg_stat_statements` and answers true, or false when the server does not load it. */
async function resetStatementCounts(db: Knex): Promise<boolean> {
  try {
    await db.raw('create extension if not exists pg_stat_statements');
    await db.raw('select pg_stat_statements_reset()');
    return true;
  } catch {
    return false;
  }
}

async function statementCounts(db: Knex, count: number): Promise<SubscriptionBenchResult['statementsPerRenewal']> {
  const { rows } = await db.raw<{ rows: { calls: string; query: string }[] }>(
    "select calls::text as calls, query from pg_stat_statements where query not like '%pg_stat_statements%' order by pg_stat_statements.calls desc",
  );
  const isTransactionEnd = (query: string) => /^(commit|rollback)\b/i.test(query.trim());
  const statements = rows.filter((row) => !/^(begin|commit|rollback|savepoint|release)\b/i.test(row.query.trim()));
  const sum = (list: typeof rows) => list.reduce((total, row) => total + Number(row.calls), 0);
  return {
    statements: sum(statements) / count,
    transactions: sum(rows.filter((row) => isTransactionEnd(row.query))) / count,
    top: statements.slice(0, 25).map((row) => ({ calls: Number(row.calls) / count, query: row.query.replace(/\s+/g, ' ').slice(0, 160) })),
  };
}

/**
 * `count` users, each subscribed to the weekly plan through the real first-period flow: the pending
 * subscription and its payment in the database, the order registered at the simulator with the card
 * to be saved, paid on the simulator's page; its notification reaches the web process, which
 * activates the subscription and keeps the card. Answers once all are active.
 */
const credentials = { userName: 'bench-merchant', password: 'bench-merchant-password' };
const notificationSecret = 'payment-notification-secret-for-the-bench-0123';

/** The web role on the stack with the processor simulator mounted (no processor configured), which also takes its notifications. */
async function startProcessorBed(stack: ScratchStack): Promise<{ url: string; services: Services; close(): Promise<void> }> {
  const config = stack.config({
    PORT: String(await freeLoopbackPort()),
    PAYMENT_PROCESSOR_LOGIN: credentials.userName,
    PAYMENT_PROCESSOR_PASSWORD: credentials.password,
    PAYMENT_NOTIFICATION_SECRET: notificationSecret,
    PAYMENT_REGISTER_TIMEOUT_MS: '400',
    PAYMENT_STATUS_TIMEOUT_MS: '400',
  });
  const services: Services = { ...stack.services, config, paymentProcessor: paymentProcessorOf(config, stack.services.db, stack.services.log) };
  const web = await startWeb(services, { processorSimulator: { notificationRetryDelaysMs: [50, 200] } });
  return { url: web.url, services, close: () => web.stop() };
}

async function activeSubscriptions(services: Services, bed: { url: string; services: Services }, plan: PlanRow, count: number): Promise<void> {
  const { db, config } = services;
  const processor = new ProcessorClient({ baseUrl: `${bed.url}/sim/processor`, ...credentials, notificationSecret, circuit: services.circuits.of('payment processor (the bench\'s own client)', 10_000) });
  const paymentIds: string[] = [];
  for (let start = 0; start < count; start += 500) {
    const users = await db('users').insert(Array.from({ length: Math.min(500, count - start) }, () => ({ is_anonymous: false }))).returning('id');
    await db.transaction(async (trx) => {
      for (const { id } of users) {
        paymentIds.push((await insertPendingSubscription(trx, config.payments, { userId: id, plan, offerIssueId: null, billingDayS: config.billingDayS })).paymentId);
      }
    });
  }
  const limit = pLimit(32);
  await Promise.all(paymentIds.map((paymentId) => limit(async () => {
    const payment = await db('payments').where({ id: paymentId }).first<PaymentRow>('*');
    const order = await processor.registerOrder(await orderRegistrationOf(db, bed.url, payment));
    await recordRegistration(db, paymentId, order);
    const paid = await fetch(order.paymentUrl, { method: 'POST', body: new URLSearchParams({ outcome: 'success' }), redirect: 'manual' });
    await paid.body?.cancel();
  })));
  // Every 200 ms: a count over every subscription, kept light beside the work it waits for. On a
  // loaded machine a notification may be given up (its status reads timing out): after a while the
  // orders still unapplied are read again, as reconciliation would.
  for (let round = 0; ; round += 1) {
    const active = await eventually(() => countWhere(db, "status = 'active' and card_binding_id is not null"), (done) => done === count, 10_000, 200).catch(() => null);
    if (active !== null) return;
    if (round === 60) throw new Error('bench: subscriptions still pending after ten minutes');
    const pending = await db('payments').where({ status: 'created', period: 1 }).select<PaymentRow[]>('*');
    await Promise.all(pending.map((payment) => limit(() => checkOrder(bed.services, payment))));
  }
}

async function countWhere(db: Knex, condition: string): Promise<number> {
  const { rows: [row] } = await db.raw<{ rows: { count: number }[] }>(`select count(*)::integer as count from subscriptions where ${condition}`);
  return row.count;
}

export async function benchSubscriptions(stack: ScratchStack, options: SubscriptionBenchOptions): Promise<SubscriptionBenchResult> {
  const { services } = stack;
  const { db } = services;
  const pgBossJobsPerSecond = await pgBossThroughput(services, options.count);
  await seedSubscriptionPlans(db);
  const plan = await db('subscription_plans').where({ code: 'plan_week' }).first<PlanRow>('*');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-subscriptions-'));
  const env = stack.serviceEnv({
    PAYMENT_NOTIFICATION_SECRET: notificationSecret,
    PAYMENT_PROCESSOR_LOGIN: credentials.userName,
    PAYMENT_PROCESSOR_PASSWORD: credentials.password,
    // The job roles never reach the AI provider here.
    PROVIDER_URL: 'http://127.0.0.1:9',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  });
  const bed = await startProcessorBed(stack);
  const roles: { stop(): Promise<void> }[] = [];
  try {
    const setupStarted = Date.now();
    await activeSubscriptions(services, bed, plan, options.count);
    const setupSeconds = (Date.now() - setupStarted) / 1000;

    const jobEnv = { ...env, PUBLIC_BASE_URL: bed.url, PAYMENT_PROCESSOR_URL: `${bed.url}/sim/processor` };
    const schedulers: Awaited<ReturnType<typeof startRole>>[] = [];
    const workers: Awaited<ReturnType<typeof startRole>>[] = [];
    for (let index = 0; index < options.schedulers; index += 1) schedulers.push(await startRole('scheduler', jobEnv));
    for (let index = 0; index < options.workers; index += 1) workers.push(await startRole('worker', jobEnv));
    roles.push(...schedulers, ...workers);
    const cpuNow = async () => {
      const own = process.cpuUsage();
      return {
        schedulers: schedulers.reduce((sum, role) => sum + processCpuMs(role.child.pid!), 0),
        workers: workers.reduce((sum, role) => sum + processCpuMs(role.child.pid!), 0),
        webAndSimulator: (own.user + own.system) / 1000,
        postgres: await postgresCpuMs(services),
      };
    };

    // Every period ends at the same moment, a little ahead: each clock (which looks at least every
    // 5 s) sees it before, and sleeps until exactly then.
    const { rows: [{ due }] } = await db.raw<{ rows: { due: Date }[] }>("select now() + interval '6 seconds' as due");
    await db.raw(
      `update subscriptions set current_period_end = :due, current_period_start = :due::timestamptz - make_interval(secs => period_days * billing_day_s), next_action_at = :due`,
      { due },
    );
    await db.raw('update plan_credit_buckets set expires_at = ? where burned_at is null', [due]);

    const countingStatements = await resetStatementCounts(db);
    const cpuBefore = await cpuNow();
    // Once a second: the count scans every subscription, and the figures come from the rows (`paid_at`).
    await eventually(() => countWhere(db, "status = 'active' and period = 2"), (renewed) => renewed === options.count, 600_000, 1000);
    const cpuAfter = await cpuNow();
    const statementsPerRenewal = countingStatements ? await statementCounts(db, options.count) : null;
    const perRenewal = (role: keyof typeof cpuBefore) => (cpuAfter[role] - cpuBefore[role]) / options.count;
    const { rows: [timing] } = await db.raw<{ rows: { last_done_s: number }[] }>(
      'select extract(epoch from max(paid_at) - ?::timestamptz)::float8 as last_done_s from payments where period = 2',
      [due],
    );
    const { rows: [charges] } = await db.raw<{ rows: { double_charges: number; extra_attempts: number }[] }>(
      `select
         (select count(*) from (select 1 from payments where subscription_id is not null and status in ('succeeded', 'refunded')
            group by subscription_id, period having count(*) > 1) as twice)::integer as double_charges,
         (select count(*) - count(distinct subscription_id) from payments where period = 2)::integer as extra_attempts`,
    );
    return {
      pgBossJobsPerSecond,
      count: options.count,
      setupSeconds,
      renewed: options.count,
      lastDoneSeconds: timing.last_done_s,
      renewalsPerSecond: options.count / timing.last_done_s,
      doubleCharges: charges.double_charges,
      extraAttempts: charges.extra_attempts,
      cpuMsPerRenewal: { schedulers: perRenewal('schedulers'), workers: perRenewal('workers'), webAndSimulator: perRenewal('webAndSimulator'), postgres: perRenewal('postgres') },
      statementsPerRenewal,
    };
  } finally {
    for (const role of roles) await role.stop();
    await bed.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export function formatSubscriptionBench(result: SubscriptionBenchResult, options: SubscriptionBenchOptions): string {
  const cpu = result.cpuMsPerRenewal;
  return [
    `## Subscription renewals (${options.schedulers} scheduler and ${options.workers} worker processes, processor simulator at zero latency in the bench's web app)`,
    `raw pg-boss, same database: ${result.pgBossJobsPerSecond.toFixed(0)} no-op jobs/s (insert + 8 work() loops of batch 200)`,
    `${result.count} subscriptions due at the same moment (set up through the first-period flow in ${result.setupSeconds.toFixed(0)} s):`
      + ` all renewed, the last ${result.lastDoneSeconds.toFixed(1)} s after they fell due (goal: within 60 s)`,
    `${result.renewalsPerSecond.toFixed(0)} renewals/s = ${((result.renewalsPerSecond / result.pgBossJobsPerSecond) * 100).toFixed(1)}% of raw pg-boss jobs/s`
      + ' (a renewal is a burn, a payment and a job in one transaction, three processor calls, a notification and the period\'s start in another)',
    `double charges: ${result.doubleCharges} (must be 0); charge attempts beyond one per period: ${result.extraAttempts}`,
    `CPU ms per renewal: schedulers ${cpu.schedulers.toFixed(1)}, workers ${cpu.workers.toFixed(1)}, web + processor simulator (this process) ${cpu.webAndSimulator.toFixed(1)},`
      + ` Postgres ${cpu.postgres.toFixed(1)}; in all ${(cpu.schedulers + cpu.workers + cpu.webAndSimulator + cpu.postgres).toFixed(1)}`
      + ` (the goal's budget on 2 cores: ${((2 * 60_000) / 10_000).toFixed(1)})`,
    ...(result.statementsPerRenewal ? statementLines(result.statementsPerRenewal) : []),
  ].join('\n');
}

function statementLines(counts: NonNullable<SubscriptionBenchResult['statementsPerRenewal']>): string[] {
  return [
    `statements per renewal (pg_stat_statements, the bench's own counting included): ${counts.statements.toFixed(1)} in ${counts.transactions.toFixed(2)} transactions; the most called:`,
    ...counts.top.map((row) => `  ${row.calls.toFixed(2)}  ${row.query}`),
  ];
}

function subscriptionOptions(): SubscriptionBenchOptions {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '10000' },
      schedulers: { type: 'string', default: '2' },
      workers: { type: 'string', default: '2' },
    },
  });
  return { count: Number(values.count), schedulers: Number(values.schedulers), workers: Number(values.workers) };
}

if (require.main === module) {
  runBench(async (stack, options) => {
    const result = await benchSubscriptions(stack, options);
    console.log(formatSubscriptionBench(result, options));
    if (result.doubleCharges !== 0 || result.extraAttempts !== 0) process.exitCode = 1;
  }, subscriptionOptions);
}
