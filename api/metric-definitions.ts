import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every Prometheus metric of a process, in one registry, exposed by `GET /metrics` (api/metrics.ts).
 * In-process metrics are updated where things happen; the database-backed gauges (queues, provider
 * slots, stream leases, finished generations) are filled at scrape time by one cheap query each, so
 * every web process reports the same cluster-wide values: aggregate those with `max`, not `sum`.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const registers = [metricsRegistry];

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request latency by route template (for SSE streams: until the stream is open and its snapshot sent).',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

export const streamsOpen = new Gauge({
  name: 'sse_streams_open',
  help: 'SSE streams open in this process, by kind.',
  labelNames: ['kind'] as const,
  registers,
});

export const streamsOpened = new Counter({
  name: 'sse_streams_opened_total',
  help: 'SSE streams opened in this process, by kind.',
  labelNames: ['kind'] as const,
  registers,
});

export const streamsRefused = new Counter({
  name: 'sse_streams_refused_total',
  help: 'SSE stream opens refused with 429 too_many_streams, by kind.',
  labelNames: ['kind'] as const,
  registers,
});

export const listenReconnects = new Counter({
  name: 'sse_listen_reconnects_total',
  help: 'Times the LISTEN connection of this process was lost and restored.',
  registers,
});

export const streamLeasesActive = new Gauge({
  name: 'sse_stream_leases_active',
  help: 'Unexpired stream slots held across all web processes.',
  registers,
});

export const queueJobsWaiting = new Gauge({
  name: 'queue_jobs_waiting',
  help: 'Jobs ready to run and not yet picked up, per pg-boss queue.',
  labelNames: ['queue'] as const,
  registers,
});

export const queueJobsDeferred = new Gauge({
  name: 'queue_jobs_deferred',
  help: 'Jobs scheduled for later (start_after in the future), per pg-boss queue.',
  labelNames: ['queue'] as const,
  registers,
});

export const queueOldestJobAge = new Gauge({
  name: 'queue_oldest_job_age_seconds',
  help: 'How long the oldest ready job of each pg-boss queue has been waiting (0 when none waits).',
  labelNames: ['queue'] as const,
  registers,
});

export const providerSlotsLeased = new Gauge({
  name: 'provider_slots_leased',
  help: 'Provider account slots currently leased by generations, per account.',
  labelNames: ['account'] as const,
  registers,
});

export const providerSlots = new Gauge({
  name: 'provider_slots',
  help: 'Concurrency slots of each enabled provider account (the pool\'s capacity).',
  labelNames: ['account'] as const,
  registers,
});

export const generationsFinished = new Counter({
  name: 'generations_finished_total',
  help: 'Generations that reached a terminal status, by status and error code (counted since this process started).',
  labelNames: ['status', 'error_code'] as const,
  registers,
});

export const generationTimeToTerminal = new Histogram({
  name: 'generation_time_to_terminal_seconds',
  help: 'From creation to a terminal status, by status (counted since this process started).',
  labelNames: ['status'] as const,
  buckets: [1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600],
  registers,
});

export const creditTransactions = new Counter({
  name: 'credit_transactions_total',
  help: 'Generation charges (kind="reserve") and their refunds (kind="refund") written to the ledger, cluster-wide, counted since this process started: the refund rate is refund / reserve.',
  labelNames: ['kind'] as const,
  registers,
});

export const paymentStatusChanges = new Counter({
  name: 'payment_status_changes_total',
  help: 'Payments that reached a status (created, succeeded, failed, expired, refunded), cluster-wide, counted since this process started.',
  labelNames: ['status'] as const,
  registers,
});

export const paymentsOpen = new Gauge({
  name: 'payments_open',
  help: 'Payments still in status created (the payer has not finished, or the outcome is unknown).',
  registers,
});

export const paymentsOldestOpenAge = new Gauge({
  name: 'payments_oldest_open_age_seconds',
  help: 'Age of the oldest payment still in status created (0 when none); above an hour the processor should long have decided.',
  registers,
});

export const subscriptionsLive = new Gauge({
  name: 'subscriptions',
  help: 'Subscriptions that hold their plan, by status (pending, active, past_due): a rising past_due share means renewal charges are declined.',
  labelNames: ['status'] as const,
  registers,
});

export const subscriptionClockLag = new Gauge({
  name: 'subscription_clock_lag_seconds',
  help: 'How late the subscription clock is: the age of the oldest due period end, reminder or retry (0 when none is due). Above a few minutes no scheduler runs, or it cannot keep up.',
  registers,
});
