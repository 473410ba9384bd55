import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGeneration } from '../../../api/generations/create';
import type { RunningPart } from '../../../services';
import { startProviderSimulator, type ProviderSimulator } from '../../../simulators/providers/provider-simulator';
import { startPreviewConsumer } from '../../../workers/generations/preview-consumer';
import { insertEffect, photo, storedUpload } from '../../generation-fixtures';
import { resetDatabase, services, testConfig, serviceEnv } from '../../harness';
import { listeningProcesses } from '../../service-processes';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobsOf } from '../../jobs';

interface Worker {
  process: ChildProcess;
  exited: Promise<number | null>;
}


/** `node dist/main.js worker` on this test run's database and storage. */
function spawnWorker(env: NodeJS.ProcessEnv): Worker {
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', '..', 'main.js'), 'worker'], { env, stdio: ['ignore', process.env.CRASH_TEST_LOGS ? 'inherit' : 'ignore', 'inherit'] });
  return { process: child, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
}

describe('crash of a worker process mid-flight', function () {
  this.timeout(120_000);
  let simulator: ProviderSimulator;
  let media: RunningPart;
  let dataDir: string;
  const workers: Worker[] = [];

  before(async () => {
    await resetDatabase();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-crash-'));
    chmodSync(dataDir, 0o755);
    simulator = await startProviderSimulator({ latencyMs: 600, accounts: { 'crash-a': 3, 'crash-b': 3 } });
    media = await startPreviewConsumer({ ...services(), config: testConfig({ MEDIA_CONCURRENCY: '4' }) });
  });
  after(async () => {
    for (const worker of workers) worker.process.kill('SIGKILL');
    await media.stop();
    await simulator.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses nothing when one of two workers is SIGKILLed: every generation ends, no lease outlives itself, credits add up', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...serviceEnv(),
      PROVIDER_URL: simulator.url,
      PROVIDER_ACCOUNTS: 'crash-a:3,crash-b:3',
      SLOT_LEASE_S: '2',
      POLL_CLAIM_S: '1',
      POLL_MIN_INTERVAL_MS: '50',
      POLL_MAX_INTERVAL_MS: '200',
      DISPATCH_TICK_MS: '100',
      SUBMIT_CONCURRENCY: '4',
      TOKEN_SECRET: 'crash-test-token-secret-that-is-long-enough-0123',
      DATA_DIR: dataDir,
      SEED_DEMO_CATALOG: '0',
      PORT: '0',
      LOG_LEVEL: process.env.CRASH_TEST_LOGS ?? 'error',
    };
    workers.push(spawnWorker(env), spawnWorker(env));
    // Logs are buffered (pino, 4 KB): readiness is read from the database instead.
    await eventually(async () => (await listeningProcesses()) >= 2, Boolean, 60_000);
    const [doomed, survivor] = workers;

    const { db } = services();
    const user = await makeUser({ guest: true, balance: 1000 });
    const effectId = await insertEffect('winter-portrait');
    const upload = await storedUpload(user.id, await photo());
    const ids: string[] = [];
    for (let index = 0; index < 30; index += 1) {
      ids.push((await createGeneration(services(), user.id, { effect_id: effectId, characters: [[upload]] }, null)).body.id);
    }

    // Mid-flight: tasks at the provider, others still waiting for a slot.
    await eventually(async () => (await db('generations').where({ status: 'processing' }).count<{ count: number }[]>('* as count'))[0].count >= 3, Boolean, 20_000);
    doomed.process.kill('SIGKILL');
    await doomed.exited;

    await eventually(async () => {
      const [{ count }] = await db('generations').whereIn('status', ['pending', 'processing']).count<{ count: number }[]>('* as count');
      return count === 0;
    }, Boolean, 60_000).catch(async (error) => {
      const stuck = await db('generations').whereIn('status', ['pending', 'processing'])
        .select('id', 'status', 'dispatch_until', 'dispatch_attempts', 'next_poll_at', 'poll_count', 'result_key', 'submit_job_id', 'provider_task_id');
      const jobs = { rows: [...await jobsOf('generation-submit.simulator'), ...await jobsOf('generation-media')].filter((job) => !['completed', 'cancelled'].includes(job.state)) };
      const slots = await db('provider_slots').select('*');
      throw new Error(`${(error as Error).message}: ${JSON.stringify({ stuck, jobs: jobs.rows, slots, now: new Date() }, null, 1)}`);
    });

    const statuses = await db('generations').select('status').count<{ status: string; count: number }[]>('* as count').groupBy('status');
    const succeeded = statuses.find((row) => row.status === 'succeeded')?.count ?? 0;
    expect(succeeded, JSON.stringify(statuses)).to.be.above(0);
    const [{ live }] = await db('provider_slots').whereNotNull('generation_id').andWhere('lease_expires_at', '>', db.fn.now()).count<{ live: number }[]>('* as live');
    expect(live).to.equal(0);
    const [{ sum }] = await db('credit_transactions').where({ user_id: user.id }).whereIn('kind', ['reserve', 'refund']).sum<{ sum: number }[]>('amount as sum');
    expect(Number(sum)).to.equal(-10 * succeeded);
    const [{ refunds }] = await db('credit_transactions').where({ user_id: user.id, kind: 'refund' }).count<{ refunds: number }[]>('* as refunds');
    expect(refunds).to.equal(30 - succeeded);

    survivor.process.kill('SIGTERM');
    expect(await survivor.exited).to.equal(0);
  });
});
