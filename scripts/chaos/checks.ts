import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { ProviderKind } from '../../common/model-route';
import { submitQueueOf } from '../../db/queues';
import { creditInvariant } from '../loadtest/report';

/** What the database says after a fault run: every generation's end, the money, the provider's view. */

export interface GenerationFigures {
  total: number;
  succeeded: number;
  failed: number;
  notTerminal: number;
  succeededWithoutPreview: number;
  withProviderTask: number;
  byErrorCode: Record<string, number>;
}

export async function generationFigures(db: Knex): Promise<GenerationFigures> {
  const { rows: [row] } = await db.raw<{ rows: Omit<GenerationFigures, 'byErrorCode'>[] }>(
    `select count(*)::integer as total,
            count(*) filter (where status = 'succeeded')::integer as succeeded,
            count(*) filter (where status = 'failed')::integer as failed,
            count(*) filter (where status in ('pending', 'processing'))::integer as "notTerminal",
            count(*) filter (where status = 'succeeded' and preview is null)::integer as "succeededWithoutPreview",
            count(*) filter (where provider_task_id is not null)::integer as "withProviderTask"
     from generations`,
  );
  const codes = await db('generations').where({ status: 'failed' }).select('error_code').count<{ error_code: string; count: number }[]>('* as count').groupBy('error_code');
  return { ...row, byErrorCode: Object.fromEntries(codes.map((code) => [code.error_code, Number(code.count)])) };
}

/** Generations not terminal, with their claims and jobs (as pg-boss answers them): what to look at when one is stuck. */
export async function stuckGenerations(db: Knex, boss: PgBoss): Promise<object[]> {
  const { rows } = await db.raw<{ rows: { provider_kind: ProviderKind; submit_job_id: string | null; media_job_id: string | null }[] }>(
    `select g.id, g.status, g.created_at, g.dispatch_until, g.dispatch_attempts, g.claimed_by, process_is_alive(g.claimed_by) as claimer_alive,
            g.submission_account_id, g.provider_account_id, g.provider_task_id, g.next_poll_at, g.poll_count, g.result_stored_at,
            g.provider_kind, g.submit_job_id, g.media_job_id,
            (select json_agg(json_build_object('account', s.account_id, 'slot', s.slot_no, 'lease_expires_at', s.lease_expires_at))
             from provider_slots s where s.generation_id = g.id) as slots,
            now() as now
     from generations g where g.status in ('pending', 'processing')`,
  );
  const job = async (queue: string, id: string | null) => {
    const found = id ? await boss.getJobById(queue, id) : null;
    return found && { name: found.name, id: found.id, state: found.state, retry_count: found.retryCount, start_after: found.startAfter, started_on: found.startedOn };
  };
  return Promise.all(rows.map(async (row) => ({
    ...row,
    jobs: [await job(submitQueueOf(row.provider_kind), row.submit_job_id), await job('generation-media', row.media_job_id)].filter(Boolean),
  })));
}

/** Generations of `ids` the database does not have. */
export async function missingGenerations(db: Knex, ids: string[]): Promise<string[]> {
  const known = new Set((await db('generations').whereIn('id', ids).select('id')).map((row: { id: string }) => row.id));
  return ids.filter((id) => !known.has(id));
}

export interface MoneyFigures {
  conserved: boolean;
  reserved: number;
  refunded: number;
  succeeded_cost: number;
  failed_not_refunded: number;
  balances: number;
  ledger: number;
  refundedTwice: number;
  failuresRefundedOnce: boolean;
}

/**
 * Credits conserved exactly (every reserve is its cost; reserves = refunds + cost of succeeded;
 * balances = ledger sum) and every failure refunded exactly once.
 */
export async function moneyFigures(db: Knex): Promise<MoneyFigures> {
  const credits = (await creditInvariant(db)) as unknown as Omit<MoneyFigures, 'refundedTwice' | 'failuresRefundedOnce'>;
  const { rows: [twice] } = await db.raw<{ rows: { count: number }[] }>(
    `select count(*)::integer as count from (
       select reference from credit_transactions where kind = 'refund' group by user_id, reference having count(*) > 1
     ) refunded_twice`,
  );
  return { ...credits, refundedTwice: twice.count, failuresRefundedOnce: credits.failed_not_refunded === 0 && twice.count === 0 };
}

export function count(db: Knex, sql: string, bindings: Record<string, unknown>): Promise<number> {
  return db.raw<{ rows: { count: number }[] }>(`select count(*)::integer as count from (${sql}) counted`, bindings).then(({ rows }) => rows[0].count);
}

/** Waits until `probe` holds, polling every `everyMs`; answers the time it took, or null at the deadline. Errors (the database restarting) count as not yet. */
export async function timeUntil(probe: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<number | null> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await probe().catch(() => false)) return Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return null;
}
