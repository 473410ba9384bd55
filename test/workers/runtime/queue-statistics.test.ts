import { expect } from 'chai';
import type { Knex } from 'knex';
import { analyzeQueueTable, staleAfterChangedRows, staleQueueTables } from '../../../db/queue-statistics';
import { enqueueMany } from '../../../db/queues';
import { startQueueStatistics } from '../../../workers/runtime/queue-statistics';
import { resetDatabase, services } from '../../harness';
import { eventually } from '../../../scripts/wait';

/** Queues `count` renewal jobs in one transaction whose counts reach the statistics at its end. */
async function queueBurst(count: number): Promise<void> {
  const { db, boss } = services();
  await db.transaction(async (trx) => {
    const jobs = Array.from({ length: count }, (_, index) => ({ data: { paymentId: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}` } }));
    await enqueueMany(boss, trx, 'subscription-renew', jobs);
    await trx.raw('select pg_stat_force_next_flush()');
  });
}

/** ANALYZE commands run on `job_common` (autovacuum's own are counted apart). */
async function timesAnalyzed(db: Knex): Promise<number> {
  const { rows: [row] } = await db.raw<{ rows: { count: number }[] }>(
    "select analyze_count::integer as count from pg_stat_user_tables where schemaname = 'pgboss' and relname = 'job_common'",
  );
  return row.count;
}

describe('queue statistics (scheduler role)', function () {
  this.timeout(45_000);

  before(async () => {
    // Autovacuum may analyze a table a burst changed at any moment, which resets the change count
    // these tests read: it is kept off this table while they run.
    await services().db.raw('alter table pgboss.job_common set (autovacuum_enabled = false)');
    await resetDatabase();
    // The reset's deletes are changes too, and a connection reports its counts when it next ends a
    // transaction or after 10 s idle: wait them out, then start from fresh statistics. The tests'
    // own jobs report at once (`queueBurst`).
    await new Promise((resolve) => setTimeout(resolve, 10_500));
    expect(await analyzeQueueTable(services().db, 'job_common')).to.equal(true);
  });
  after(async () => {
    await services().db.raw('alter table pgboss.job_common reset (autovacuum_enabled)');
    await resetDatabase();
  });

  it('finds a pg-boss table stale once a burst of jobs changed a thousand rows since its statistics, not before, and not after analyzing it', async () => {
    const { db } = services();
    await queueBurst(staleAfterChangedRows / 2);
    expect(await staleQueueTables(db)).not.to.include('job_common');
    await queueBurst(staleAfterChangedRows / 2);
    await eventually(() => staleQueueTables(db), (tables) => tables.includes('job_common'));
    expect(await analyzeQueueTable(db, 'job_common')).to.equal(true);
    await eventually(() => staleQueueTables(db), (tables) => !tables.includes('job_common'));
  });

  it('leaves a table another process is analyzing to it', async () => {
    const { db } = services();
    const holder = await db.transaction();
    try {
      await holder.raw("select pg_advisory_xact_lock(hashtextextended('analyze:pgboss.job_common', 0))");
      const before = await timesAnalyzed(db);
      expect(await analyzeQueueTable(db, 'job_common')).to.equal(false);
      expect(await timesAnalyzed(db)).to.equal(before);
    } finally {
      await holder.rollback();
    }
    expect(await analyzeQueueTable(db, 'job_common')).to.equal(true);
  });

  it('runs in the scheduler: a burst is analyzed within seconds, and a quiet table is left alone', async () => {
    const { db } = services();
    const part = startQueueStatistics(services());
    try {
      const before = await timesAnalyzed(db);
      await queueBurst(staleAfterChangedRows + 200);
      await eventually(() => timesAnalyzed(db), (count) => count > before, 15_000, 200);
      const after = await timesAnalyzed(db);
      // Five seconds later nothing changed since: no second analysis.
      await new Promise((resolve) => setTimeout(resolve, 6000));
      expect(await timesAnalyzed(db)).to.equal(after);
    } finally {
      await part.stop();
    }
  });
});
