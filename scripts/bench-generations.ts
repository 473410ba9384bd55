import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { reserveAndQueue } from '../api/generations/create';
import { credit } from '../db/credits/ledger';
import { uploadKey } from '../media/object-keys';
import type { Services } from '../services';
import { startProviderSimulator } from '../simulators/provider/provider-simulator';
import { pgBossThroughput } from './bench-pg-boss';
import { resetDatabase, services as testServices, startSharedInfrastructure, stopSharedInfrastructure, serviceEnv } from '../test/harness';

/**
 * `node dist/scripts/bench-generations.js [--count 300] [--zero-slots 64] [--latency-ms 1500] [--slots 8] [--cycles 8]`
 *
 * From one run on one database (figures only compare within the run; these machines are noisy):
 * 1. raw pg-boss: N no-op jobs inserted and completed by 8 work() loops of batch 200 (the queue's ceiling);
 * 2. the pipeline with provider latency 0: N generations from pending to succeeded (our overhead:
 *    dispatch, photo check, submit, poll, result copy, preview, transitions), beside figure 1;
 * 3. the pipeline with latency L and S slots: throughput as a share of the ideal S/L (target >= 90%),
 *    from the commit of S x cycles generations until the provider is done with the last one.
 * One `worker` and one `media` process (`node dist/main.js <role>`), the simulator in this process.
 */
export interface GenerationBenchOptions {
  count: number;
  /** Slots of the latency-0 run: many, so that the pipeline itself, not the pool, is what is measured. */
  zeroSlots: number;
  latencyMs: number;
  slots: number;
  cycles: number;
}

export interface GenerationBenchResult {
  pgBossJobsPerSecond: number;
  latencyZero: { slots: number; generations: number; seconds: number; providerDonePerSecond: number; succeededPerSecond: number };
  latencyL: { latencyMs: number; slots: number; generations: number; seconds: number; perSecond: number; idealPerSecond: number; shareOfIdeal: number; succeededShareOfIdeal: number };
}

/**
 * One user with enough credits, one effect, one photo, and `count` pending generations committed in
 * ONE transaction, so the pipeline sees the whole line at once; answers their ids and the commit time.
 */
async function queueGenerations(services: Services, count: number): Promise<{ ids: string[]; committedAt: number }> {
  const { db, storage, config } = services;
  const [user] = await db('users').insert({ is_anonymous: true }).returning('id');
  await db.transaction((trx) => credit(trx, { userId: user.id, kind: 'guest_start', amount: count * 10, reference: 'bench' }));
  const [effect] = await db('effects').insert({
    slug: `bench-${Date.now()}`, name_ru: 'bench', name_en: 'bench', poster_key: 'catalog/bench.jpg',
    cost: 10, characters: JSON.stringify([{ min_photos: 1, max_photos: 1 }]), output_type: 'image', model: 'image',
  }).returning('id');
  const photo = await sharp({ create: { width: 256, height: 256, channels: 3, background: '#808080' } }).jpeg().toBuffer();
  const uploadId = (await db.raw('select gen_random_uuid() as id')).rows[0].id as string;
  const objectKey = uploadKey(user.id, uploadId, 'jpg');
  await db('uploads').insert({ id: uploadId, user_id: user.id, object_key: objectKey, content_type: 'image/jpeg' });
  await storage.put(objectKey, photo, 'image/jpeg');
  const generous = { ...services, config: { ...config, generations: { ...config.generations, maxQueuedGenerations: 1_000_000 } } };
  const plan = { kind: 'effect' as const, effectId: effect.id, studioCategoryId: null, prompt: null, cost: 10, outputType: 'image' as const, model: 'image', inputs: [{ upload_id: uploadId, object_key: objectKey, person: 0 }] };
  const ids = await db.transaction(async (trx) => {
    const queued: string[] = [];
    for (let index = 0; index < count; index += 1) queued.push(await reserveAndQueue(trx, generous, user.id, plan) as string);
    return queued;
  });
  return { ids, committedAt: Date.now() };
}

interface PipelineProcesses {
  simulatorUrl: string;
  stop(): Promise<void>;
}

/** Dispatchers listening for new generations: one per worker process that finished starting. */
async function listeningWorkers(services: Services): Promise<number> {
  const { rows } = await services.db.raw(
    `select count(*)::integer as count from pg_stat_activity
     where application_name = 'effects-backend-listen' and query = 'LISTEN "generation_status"' and pid <> ?`,
    [services.listenHub.backendPid() ?? 0],
  );
  return rows[0].count;
}

/**
 * The simulator here, and `node dist/main.js worker` and `node dist/main.js media` each in its own
 * process, as in production (so the simulator's rendering does not share the worker's event loop).
 */
async function startPipelineProcesses(services: Services, latencyMs: number, slotsPerAccount: number): Promise<PipelineProcesses> {
  const simulator = await startProviderSimulator({ latencyMs, accounts: { 'bench-a': slotsPerAccount, 'bench-b': slotsPerAccount } });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...serviceEnv(),
    PROVIDER_URL: simulator.url,
    PROVIDER_ACCOUNTS: `bench-a:${slotsPerAccount},bench-b:${slotsPerAccount}`,
    SUBMIT_CONCURRENCY: '32',
    POLL_CONCURRENCY: '32',
    MEDIA_CONCURRENCY: '4',
    PENDING_TIMEOUT_S: '3600',
    TOKEN_SECRET: 'bench-token-secret-that-is-long-enough-0123456789',
    DATA_DIR: path.join(os.tmpdir(), `bench-generations-${process.pid}`),
    SEED_DEMO_CATALOG: '0',
    PORT: '0',
    LOG_LEVEL: 'warn',
  };
  const before = await listeningWorkers(services);
  const children: ChildProcess[] = ['worker', 'media'].map((role) =>
    spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), role], { env, stdio: ['ignore', 'inherit', 'inherit'] }));
  const deadline = Date.now() + 60_000;
  while ((await listeningWorkers(services)) <= before) {
    if (Date.now() > deadline || children.some((child) => child.exitCode !== null)) throw new Error('the worker process did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The media role listens too; give it its own moment (its queue polls every 0.5 s anyway).
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return {
    simulatorUrl: simulator.url,
    stop: async () => {
      await Promise.all(children.map((child) => new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      })));
      await simulator.stop();
    },
  };
}

/** Seconds from the commit of `ids` until the provider was done with all (results stored) and until all succeeded. */
async function timeToFinish(services: Services, ids: string[], committedAt: number): Promise<{ providerDoneS: number; succeededS: number }> {
  let providerDoneS = 0;
  for (;;) {
    const [row] = await services.db('generations').whereIn('id', ids).select(
      services.db.raw("count(*) filter (where result_key is not null or status = 'succeeded')::integer as done"),
      services.db.raw("count(*) filter (where status = 'succeeded')::integer as succeeded"),
      services.db.raw("count(*) filter (where status = 'failed')::integer as failed"),
    );
    if (row.failed > 0) throw new Error(`${row.failed} generations failed during the bench`);
    if (!providerDoneS && row.done === ids.length) providerDoneS = (Date.now() - committedAt) / 1000;
    if (row.succeeded === ids.length) return { providerDoneS, succeededS: (Date.now() - committedAt) / 1000 };
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function benchGenerations(services: Services, options: GenerationBenchOptions): Promise<GenerationBenchResult> {
  const pgBossJobsPerSecond = await pgBossThroughput(services, options.count);
  const slotsPerAccount = Math.ceil(options.slots / 2);
  const slots = slotsPerAccount * 2;

  let processes = await startPipelineProcesses(services, 0, Math.ceil(options.zeroSlots / 2));
  let zero: { ids: string[]; providerDoneS: number; succeededS: number };
  try {
    const queued = await queueGenerations(services, options.count);
    zero = { ids: queued.ids, ...(await timeToFinish(services, queued.ids, queued.committedAt)) };
  } finally {
    await processes.stop();
  }

  processes = await startPipelineProcesses(services, options.latencyMs, slotsPerAccount);
  let timed: { ids: string[]; providerDoneS: number; succeededS: number };
  try {
    const queued = await queueGenerations(services, slots * options.cycles);
    timed = { ids: queued.ids, ...(await timeToFinish(services, queued.ids, queued.committedAt)) };
  } finally {
    await processes.stop();
  }
  const idealPerSecond = slots / (options.latencyMs / 1000);
  const perSecond = timed.ids.length / timed.providerDoneS;
  return {
    pgBossJobsPerSecond,
    latencyZero: { slots: Math.ceil(options.zeroSlots / 2) * 2, generations: zero.ids.length, seconds: zero.succeededS, providerDonePerSecond: zero.ids.length / zero.providerDoneS, succeededPerSecond: zero.ids.length / zero.succeededS },
    latencyL: {
      latencyMs: options.latencyMs,
      slots,
      generations: timed.ids.length,
      seconds: timed.providerDoneS,
      perSecond,
      idealPerSecond,
      shareOfIdeal: perSecond / idealPerSecond,
      succeededShareOfIdeal: timed.ids.length / timed.succeededS / idealPerSecond,
    },
  };
}

export function formatGenerationBench(result: GenerationBenchResult): string {
  const { latencyZero: zero, latencyL: timed } = result;
  return [
    '## Generations pipeline (one worker and one media process, provider simulator on loopback)',
    `raw pg-boss, same database: ${result.pgBossJobsPerSecond.toFixed(0)} no-op jobs/s (insert + 8 work() loops of batch 200)`,
    `latency 0, ${zero.slots} slots, ${zero.generations} generations: ${zero.providerDonePerSecond.toFixed(1)}/s provider done, ${zero.succeededPerSecond.toFixed(1)}/s succeeded`
      + ` (${((zero.succeededPerSecond / result.pgBossJobsPerSecond) * 100).toFixed(1)}% of raw pg-boss jobs/s; a generation is ~30 SQL statements in 7 transactions, 3 jobs, 4 NOTIFYs, 5 object reads and writes, a simulated render and a preview, all on this machine)`,
    `latency ${timed.latencyMs} ms, ${timed.slots} slots, ${timed.generations} generations: ${timed.perSecond.toFixed(2)}/s vs ideal ${timed.idealPerSecond.toFixed(2)}/s`
      + ` = ${(timed.shareOfIdeal * 100).toFixed(1)}% of S/L (target >= 90%); to succeeded incl. previews: ${(timed.succeededShareOfIdeal * 100).toFixed(1)}%`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '300' },
      'zero-slots': { type: 'string', default: '64' },
      'latency-ms': { type: 'string', default: '1500' },
      slots: { type: 'string', default: '8' },
      cycles: { type: 'string', default: '8' },
    },
  });
  await startSharedInfrastructure();
  try {
    await resetDatabase();
    const result = await benchGenerations(testServices(), {
      count: Number(values.count),
      zeroSlots: Number(values['zero-slots']),
      latencyMs: Number(values['latency-ms']),
      slots: Number(values.slots),
      cycles: Number(values.cycles),
    });
    console.log(formatGenerationBench(result));
  } finally {
    await stopSharedInfrastructure();
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
