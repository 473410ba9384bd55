import { parseArgs } from 'node:util';
import { encode } from 'blurhash';
import sharp from 'sharp';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { isProviderKind, providerKinds, type ProviderKind } from '../common/model-route';
import { reserveAndQueue } from '../services/generations/reserve-and-queue';
import { signAccessToken } from '../api/tokens/access-token';
import { credit } from '../db/credits/ledger';
import { demoPhoto } from '../media/demo-assets';
import type { Services } from '../services';
import { startProviderSimulator, type ProviderSimulator } from '../simulators/providers/provider-simulator';
import { simulatedAccounts, simulatedApiEnv, simulatedRoute } from '../simulators/providers/simulated-kinds';
import { createUpload } from '../api/uploads/uploads';
import { freeLoopbackPort as freePort } from '../db/postgres';
import type { ScratchStack } from '../process/scratch-stack';
import { postToTicket } from './upload-ticket';
import { reportFigure } from './bench-figures';
import { wholeOption } from './bench-options';
import { pgBossThroughput } from './bench-pg-boss';
import { runBench } from './bench-runner';
import { percentile, postgresCpuByClient, postgresCpuMs, processCpuMs } from './load';

/**
 * `node dist/scripts/bench-generations.js [--count 300] [--warm-up 100] [--photos flat,face] [--zero-slots 64] [--kind simulator]
 *   [--latency-ms 1500] [--slots 8] [--cycles 15] [--warm-up-cycles 3] [--kinds simulator,replicate,fal] [--pool-only]`
 *
 * From one run on one database (figures only compare within the run; these machines are noisy):
 * 1. raw pg-boss: N no-op jobs inserted and completed by 8 work() loops of batch 200 (the queue's ceiling);
 * 2. the pipeline with provider latency 0: N generations from pending to succeeded (our overhead:
 *    dispatch, photo check, submit, poll, result copy, preview, transitions), beside figure 1;
 *    The generations are created through `POST /v1/generations` by 8 clients, each its own user,
 *    after a warm-up of `--warm-up` generations through the same processes (a running service's
 *    pooled connections have their statements prepared); the CPU time of each process role
 *    (web, worker, media, Postgres) per succeeded generation is printed beside the CPU time of a
 *    bare preview (sharp's WebP thumb and the blurhash) of the same result image, measured just
 *    before the run and just after it (the mean of the two); once from a
 *    256x256 flat grey photo and once from the demo
 *    catalog's 640x800 face photo (closer to what phones upload), on the same processes;
 * 3. per provider kind of `--kinds` (accounts of that kind, the simulator speaking its protocol,
 *    the effect routed on it), the pipeline with latency L and S slots: throughput as a share of the ideal S/L, the
 *    median of its cycles' (each S tasks ended, goal >= 97%) beside the whole run's,
 *    from the commit of S x cycles generations until the provider's last task ended (and beside it,
 *    until the last one succeeded: its result copied, its preview made), after `--warm-up-cycles`
 *    cycles of S through the same processes (their hand-overs printed apart, as cold), and
 *    the slot time lost between a task's end at the provider and the next submission on its slot;
 *    first with every task callback lost (polling alone: the same-run baseline), then with them;
 *    beside it, the provider's own reading of each photo before its latency starts (its slot time,
 *    not the caller's: the embedded object store serves one GET at a time, ~1.7 ms of CPU each).
 * One `web`, one `worker` and one `media` process (`node dist/main.js <role>`; the web role takes
 * the provider's task callbacks), the simulator in this process.
 * 15 cycles a kind give 120 timed hand-overs, so that their p99 is not simply their maximum (it is
 * with fewer than 100); the maximum is printed beside it. Three kinds of 15 take about as long as
 * one of 25 and one of 15 did. `--pool-only` leaves out 1 and 2 (the latency-0 runs).
 */
export interface GenerationBenchOptions {
  count: number;
  /** Generations through the latency-0 processes before the measured ones. */
  warmUp: number;
  /** A latency-0 run for each, one after the other on the same processes. */
  photos: PhotoKind[];
  /** Slots of the latency-0 run: many, so that the pipeline itself, not the pool, is what is measured. */
  zeroSlots: number;
  latencyMs: number;
  slots: number;
  cycles: number;
  /**
   * Cycles of S through the latency-L processes before the timed ones (0: none). From the second on
   * they hand slots over: the first hand-overs of fresh processes open pooled connections and plan
   * their statements on each, as a running service has done long before.
   */
  warmUpCycles: number;
  /**
   * The provider kind of the latency-0 runs: the kind whose accounts the pool has and whose route the
   * effect names (the simulator speaks its protocol); a kind whose adapter this build lacks stops the
   * worker at its start.
   */
  kind: ProviderKind;
  /** The kinds the timed pool runs on, one after the other. */
  kinds: ProviderKind[];
  /** False: the timed pool runs only (`--pool-only`). */
  latencyZero: boolean;
}

/** The accounts of the pool, `bench-a` and `bench-b`, configured as accounts of `kind`. */
function benchAccounts(kind: ProviderKind, slotsPerAccount: number): { env: Record<string, string>; keys: Record<string, number> } {
  return simulatedAccounts(kind, ['bench-a', 'bench-b'], slotsPerAccount);
}

/** CPU ms per succeeded generation, by process role. */
export interface RoleCpu {
  web: number;
  worker: number;
  media: number;
  postgres: number;
}

export interface LatencyZeroRun {
  slots: number; generations: number; seconds: number; succeededPerSecond: number;
  photo: PhotoKind;
  cpuMsPerGeneration: RoleCpu;
  /** CPU ms of sharp's WebP thumb and the blurhash of the same result image, in this process: the mean of `barePreviewRunsMs`. */
  barePreviewCpuMs: number;
  /** The bare preview measured just before the run and just after it (only after, without a warm-up). */
  barePreviewRunsMs: number[];
  /** `cpuMsPerGeneration.postgres` by whose it is: the backends of each role's connections, the bench's, Postgres's own processes. */
  postgresByClient: Record<string, number>;
}

export interface GenerationBenchResult {
  pgBossJobsPerSecond: number;
  /** One run per photo kind, the table's (`flat`) first; none with `--pool-only`. */
  latencyZero: LatencyZeroRun[];
  /** The timed pool, one per provider kind. */
  pools: PoolRun[];
}

export interface PoolRun {
  kind: ProviderKind;
  latencyL: {
    latencyMs: number; slots: number; generations: number; seconds: number; perSecond: number; idealPerSecond: number; shareOfIdeal: number; succeededShareOfIdeal: number;
    /** The median over the timed cycles of each cycle's share of S/L (`cycleShares`): the pool's figure. */
    cycleShareMedian: number;
    /** ms from a task's end at the provider to the next submission on its slot. */
    slotGaps: Spread;
    /** The same during the warm-up cycles: the first hand-overs of fresh processes. */
    coldSlotGaps: Spread;
    /** ms from a task's end to the web role's answer to its callback (slot freed, NOTIFY sent): the first part of the hand-over. */
    callbackAnswered: Spread;
    /** ms the provider spent reading a task's photos (from its file store or the object store, the header checked) before its latency: its own slot time. */
    inputReadMeanMs: number;
    inputReadP99Ms: number;
    /** Photos the provider read from its own file store (staged ahead of the slot) rather than downloaded. */
    stagedInputsRead: number;
    /** The throughput as a share of S / (L + the mean read): the ideal that leaves the provider's own reading out of the caller's waste. */
    shareOfIdealWithReads: number;
    /** Polls of a task's state (`GET /v1/tasks/{id}`) per generation. */
    pollsPerGeneration: number;
  };
  /** The same run with every callback lost (polling alone): the same-run baseline of the callbacks. */
  latencyLPolling: TimedRun;
}

interface TimedRun {
  shareOfIdeal: number;
  cycleShareMedian: number;
  perSecond: number;
  slotGaps: Spread;
  pollsPerGeneration: number;
}

/** Durations in ms: their median, their 99th percentile and how many there were. */
interface Spread {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  count: number;
}

function spreadOf(valuesMs: number[]): Spread {
  const sorted = [...valuesMs].sort((a, b) => a - b);
  return { p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? 0, count: sorted.length };
}

/** The photo every generation is made of: `flat` a 256x256 grey JPEG (the table's), `face` the demo catalog's 640x800 face. */
export type PhotoKind = 'flat' | 'face';

export interface BenchFixture {
  userId: string;
  effectId: string;
  uploadId: string;
  plan: Parameters<typeof reserveAndQueue>[3];
}

/** One user with enough credits for `count` generations, one effect, one stored photo. */
export async function benchFixture(services: Services, count: number, kind: ProviderKind, photoKind: PhotoKind = 'flat'): Promise<BenchFixture> {
  const { db } = services;
  const [user] = await db('users').insert({ is_anonymous: true }).returning('id');
  await db.transaction((trx) => credit(trx, { userId: user.id, kind: 'guest_start', amount: count * 10, reference: 'bench' }));
  const [effect] = await db('effects').insert({
    slug: `bench-${randomUUID()}`, name_ru: 'bench', name_en: 'bench', poster_key: 'catalog/bench.jpg',
    cost: 10, characters: JSON.stringify([{ min_photos: 1, max_photos: 1 }]), output_type: 'image', model: 'image',
    runs: kind === 'simulator' ? null : JSON.stringify({ [kind]: simulatedRoute(kind, 'image') }),
  }).returning('id');
  const photo = photoKind === 'face' ? await demoPhoto() : await sharp({ create: { width: 256, height: 256, channels: 3, background: '#808080' } }).jpeg().toBuffer();
  // Through its upload ticket, as a phone puts it (the API takes no other).
  const ticket = await createUpload(db, services.storage, user.id, 'image/jpeg');
  await postToTicket(ticket, photo, 'image/jpeg');
  const uploadId = ticket.id;
  const { object_key: objectKey } = await db('uploads').where({ id: uploadId }).first('object_key');
  const plan = { kind: 'effect' as const, effectId: effect.id, studioCategoryId: null, prompt: null, cost: 10, outputType: 'image' as const, model: 'image', providerKind: kind, route: simulatedRoute(kind, 'image'), inputs: [{ upload_id: uploadId, object_key: objectKey, person: 0 }] };
  return { userId: user.id, effectId: effect.id, uploadId, plan };
}

/**
 * `count` pending generations committed in ONE transaction, so the pipeline sees the whole line at
 * once; answers their ids and the commit time.
 */
async function queueGenerations(services: Services, count: number, kind: ProviderKind): Promise<{ ids: string[]; committedAt: number }> {
  const { db, config } = services;
  const { userId, plan } = await benchFixture(services, count, kind);
  const generous = { ...services, config: { ...config, generations: { ...config.generations, maxQueuedGenerations: 1_000_000 } } };
  const ids = await db.transaction(async (trx) => {
    const queued: string[] = [];
    for (let index = 0; index < count; index += 1) queued.push(await reserveAndQueue(trx, generous, userId, plan) as string);
    return queued;
  });
  return { ids, committedAt: Date.now() };
}

/** `count` generations created through `POST /v1/generations` by 8 clients; answers their ids and when the first was sent. */
async function createGenerations(services: Services, webUrl: string, count: number, photoKind: PhotoKind, kind: ProviderKind): Promise<{ ids: string[]; committedAt: number }> {
  // Eight phones at once, each its own user: one user's eight at once would mostly measure the
  // wait for that user's balance row (a phone creates one generation at a time).
  const clients = await Promise.all(Array.from({ length: 8 }, async () => {
    const { userId, effectId, uploadId } = await benchFixture(services, count, kind, photoKind);
    return { effectId, uploadId, token: await signAccessToken(services.config.tokenSecret, userId, 3600) };
  }));
  const ids: string[] = [];
  const committedAt = Date.now();
  let next = 0;
  await Promise.all(clients.map(async ({ effectId, uploadId, token }) => {
    while (next < count) {
      next += 1;
      const response = await fetch(`${webUrl}/v1/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ effect_id: effectId, characters: [[uploadId]] }),
      });
      const body = await response.json() as { id?: string };
      if (response.status !== 202 || !body.id) throw new Error(`POST /v1/generations answered ${response.status}: ${JSON.stringify(body)}`);
      ids.push(body.id);
    }
  }));
  return { ids, committedAt };
}

export interface PipelineProcesses {
  simulator: ProviderSimulator;
  webUrl: string;
  pids: { web: number; worker: number; media: number };
  stop(): Promise<void>;
}

/** LISTEN connections of other processes (each role process holds one once it has started listening). */
async function listeningProcesses(services: Services): Promise<number> {
  const { rows } = await services.db.raw(
    `select count(*)::integer as count from pg_stat_activity
     where application_name = 'effects-backend-listen' and query like 'LISTEN %' and pid <> ?`,
    [services.listenHub.backendPid() ?? 0],
  );
  return rows[0].count;
}

/**
 * The simulator here, and `node dist/main.js web`, `worker` and `media` each in its own process, as
 * in production (so the simulator's rendering does not share the worker's event loop); the provider
 * calls the web process back when a task is done.
 */
export async function startPipelineProcesses(stack: ScratchStack, kind: ProviderKind, latencyMs: number, slotsPerAccount: number, callbacks = true): Promise<PipelineProcesses> {
  const { services } = stack;
  const accounts = benchAccounts(kind, slotsPerAccount);
  const simulator = await startProviderSimulator({ latencyMs, accounts: accounts.keys });
  const webPort = await freePort();
  const webUrl = `http://127.0.0.1:${webPort}`;
  // Without callbacks they go to a closed port: every one is lost and polling alone finds the ends.
  const callbackBase = callbacks ? webUrl : `http://127.0.0.1:${await freePort()}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...stack.serviceEnv(),
    PROVIDER_URL: simulator.url,
    ...simulatedApiEnv(kind, simulator.url),
    ...accounts.env,
    PROVIDER_CALLBACK_BASE_URL: callbackBase,
    SUBMIT_CONCURRENCY: '32',
    POLL_CONCURRENCY: '32',
    MEDIA_CONCURRENCY: '4',
    PENDING_TIMEOUT_S: '3600',
    MAX_QUEUED_GENERATIONS: '1000000',
    RATE_WRITE_BURST: '1000000',
    // This process's secret: its upload tickets and access tokens must hold in the web process.
    TOKEN_SECRET: services.config.tokenSecret,
    DATA_DIR: path.join(os.tmpdir(), `bench-generations-${process.pid}`),
    SEED_DEMO_CATALOG: '0',
    PORT: '0',
    LOG_LEVEL: 'warn',
  };
  const before = await listeningProcesses(services);
  const roles = ['web', 'worker', 'media'] as const;
  const children = roles.map((role) => spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), role], {
    env: role === 'web' ? { ...env, PORT: String(webPort) } : env,
    stdio: ['ignore', 'inherit', 'inherit'],
  }));
  const stop = async () => {
    await Promise.all(children.map((child) => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    })));
    await simulator.stop();
  };
  const deadline = Date.now() + 60_000;
  const webReady = async () => fetch(`${webUrl}/healthz`).then((response) => response.ok, () => false);
  while ((await listeningProcesses(services)) < before + roles.length || !(await webReady())) {
    if (Date.now() > deadline || children.some((child) => child.exitCode !== null)) {
      await stop();
      throw new Error('the pipeline processes did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Each has its connection; give them a moment to LISTEN on every channel.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const [web, worker, media] = children.map((child) => child.pid!);
  return { simulator, webUrl, pids: { web, worker, media }, stop };
}

/**
 * A preview as anyone would make it with the two libraries and their defaults: sharp's WebP thumb
 * (480 on the short side, quality 80, effort 4), and the `blurhash` package's encoder over sharp's
 * 32-pixel sample of it. Not our `webpCopy` and `blurhashOf`, so that the baseline does not move
 * with our own code (ours spends effort 2 on the WebP, and gives the same blurhash from tables).
 */
async function barePreview(image: Buffer): Promise<string> {
  const thumb = await sharp(image).autoOrient().resize({ width: 480, height: 480, fit: 'outside', withoutEnlargement: true }).webp({ quality: 80 }).toBuffer();
  const { data, info } = await sharp(thumb).autoOrient().resize({ width: 32, height: 32, fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return encode(new Uint8ClampedArray(data), info.width, info.height, 4, 3);
}

/**
 * CPU ms of `barePreview` of `image`, here: the median of 5 batches of 10 (one batch on a busy
 * moment of this shared machine moved a plain average by 20%).
 */
async function barePreviewCpuMs(image: Buffer): Promise<number> {
  await barePreview(image);
  const batches: number[] = [];
  for (let batch = 0; batch < 5; batch += 1) {
    const before = process.cpuUsage();
    for (let round = 0; round < 10; round += 1) await barePreview(image);
    const used = process.cpuUsage(before);
    batches.push((used.user + used.system) / 1000 / 10);
  }
  return spreadOf(batches).p50Ms;
}

/** `barePreviewCpuMs` of the result image of one of `ids`. */
async function barePreviewOfResults(services: Services, ids: string[]): Promise<number> {
  const { result_key: resultKey } = await services.db('generations').whereIn('id', ids).whereNotNull('result_key').first('result_key');
  return barePreviewCpuMs(await services.storage.get(resultKey));
}

/**
 * Seconds from the commit of `ids` until all succeeded, from the generations' own timestamps: the
 * bench looks only every 100 ms, so that its looking costs Postgres little of the CPU it measures,
 * and the time is exact all the same.
 */
async function secondsToSucceed(services: Services, ids: string[], committedAt: number): Promise<number> {
  for (;;) {
    const [row] = await services.db('generations').whereIn('id', ids).select(
      services.db.raw("count(*) filter (where status = 'succeeded')::integer as succeeded"),
      services.db.raw("count(*) filter (where status = 'failed')::integer as failed"),
      services.db.raw('extract(epoch from max(finished_at)) * 1000 as finished_ms'),
    );
    if (row.failed > 0) throw new Error(`${row.failed} generations failed during the bench`);
    if (row.succeeded === ids.length) {
      return (Number(row.finished_ms) - committedAt) / 1000;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function benchGenerations(stack: ScratchStack, options: GenerationBenchOptions): Promise<GenerationBenchResult> {
  const { services } = stack;
  const pgBossJobsPerSecond = await pgBossThroughput(services, options.count);
  if (!options.latencyZero) return { pgBossJobsPerSecond, latencyZero: [], pools: await benchPools(stack, options) };

  const processes = await startPipelineProcesses(stack, options.kind, 0, Math.ceil(options.zeroSlots / 2));
  const latencyZero: LatencyZeroRun[] = [];
  try {
    const { pids } = processes;
    const cpuNow = async (): Promise<RoleCpu> => ({
      web: processCpuMs(pids.web), worker: processCpuMs(pids.worker), media: processCpuMs(pids.media), postgres: await postgresCpuMs(services),
    });
    const postgresNow = () => postgresCpuByClient(services, { ...pids, bench: process.pid });
    for (const photo of options.photos) {
      // A service that has been running: its pooled connections hold the pipeline's statements
      // prepared, with their plans settled. The first runs on a new connection plan each time.
      // The bare preview is measured just before and just after the run (of a warm-up result, the
      // same image), so that a change of this shared machine's speed moves both sides of the ratio.
      let bareBefore: number | null = null;
      if (options.warmUp > 0) {
        const warmUp = await createGenerations(services, processes.webUrl, options.warmUp, photo, options.kind);
        await secondsToSucceed(services, warmUp.ids, warmUp.committedAt);
        bareBefore = await barePreviewOfResults(services, warmUp.ids);
      }
      const postgresBefore = await postgresNow();
      const before = await cpuNow();
      const created = await createGenerations(services, processes.webUrl, options.count, photo, options.kind);
      const succeededS = await secondsToSucceed(services, created.ids, created.committedAt);
      const after = await cpuNow();
      const postgresAfter = await postgresNow();
      const bareAfter = await barePreviewOfResults(services, created.ids);
      const per = (role: keyof RoleCpu) => (after[role] - before[role]) / created.ids.length;
      latencyZero.push({
        slots: Math.ceil(options.zeroSlots / 2) * 2,
        photo,
        generations: created.ids.length,
        seconds: succeededS,
        succeededPerSecond: created.ids.length / succeededS,
        cpuMsPerGeneration: { web: per('web'), worker: per('worker'), media: per('media'), postgres: per('postgres') },
        barePreviewCpuMs: bareBefore === null ? bareAfter : (bareBefore + bareAfter) / 2,
        barePreviewRunsMs: bareBefore === null ? [bareAfter] : [bareBefore, bareAfter],
        postgresByClient: Object.fromEntries(Object.entries(postgresAfter)
          .map(([owner, ms]) => [owner, (ms - (postgresBefore[owner] ?? 0)) / created.ids.length])),
      });
    }
  } finally {
    await processes.stop();
  }

  return { pgBossJobsPerSecond, latencyZero, pools: await benchPools(stack, options) };
}

/**
 * Each timed cycle's throughput as a share of S/L: L over the time from the previous cycle's last
 * task end (the first cycle: from the commit) to the end of its own S tasks, the tasks counted in
 * the order they ended.
 */
export function cycleShares(completedAtMs: number[], committedAt: number, slots: number, latencyMs: number): number[] {
  const ends = [...completedAtMs].sort((a, b) => a - b);
  const shares: number[] = [];
  for (let last = slots - 1, start = committedAt; last < ends.length; start = ends[last], last += slots) shares.push(latencyMs / (ends[last] - start));
  return shares;
}

/** The timed pool on each kind of `options.kinds`, one after the other. */
async function benchPools(stack: ScratchStack, options: GenerationBenchOptions): Promise<PoolRun[]> {
  const pools: PoolRun[] = [];
  for (const kind of options.kinds) pools.push(await benchPool(stack, options, kind));
  return pools;
}

/**
 * The pipeline at latency L with S slots of accounts of `kind`, the simulator speaking its protocol:
 * first with every callback lost (polling alone, the baseline), then with them.
 */
async function benchPool(stack: ScratchStack, options: GenerationBenchOptions, kind: ProviderKind): Promise<PoolRun> {
  const { services } = stack;
  const slotsPerAccount = Math.ceil(options.slots / 2);
  const slots = slotsPerAccount * 2;
  const timedRun = async (callbacks: boolean) => {
    // A deployment whose callbacks never came: none of the latency-0 runs' counts as arriving.
    if (!callbacks) await services.db('provider_slots').update({ called_back_at: null });
    const started = await startPipelineProcesses(stack, kind, options.latencyMs, slotsPerAccount, callbacks);
    try {
      // Cycles through the same processes first, hand-overs among them, as a running service has
      // its pooled connections open and its statements prepared (the latency-0 run's warm-up).
      const warmUp = options.warmUpCycles > 0 ? await queueGenerations(services, slots * options.warmUpCycles, kind) : null;
      if (warmUp) await secondsToSucceed(services, warmUp.ids, warmUp.committedAt);
      const before = started.simulator.stats();
      const queued = await queueGenerations(services, slots * options.cycles, kind);
      const succeededS = await secondsToSucceed(services, queued.ids, queued.committedAt);
      const after = started.simulator.stats();
      // The first hand-over on each slot after the warm-up spans the bench's own pause: left out.
      const firstGap = warmUp ? before.slotGapsMs.length + slots : 0;
      if (after.lastCompletedAt === null) throw new Error('the provider finished no task');
      return {
        ids: queued.ids,
        // The pool's throughput ends with the provider's last task. The copies and previews of the
        // last cycle's results come after it (in a steady stream, on the next cycle's slot time):
        // they count in `succeededS`.
        providerDoneS: (after.lastCompletedAt - queued.committedAt) / 1000,
        succeededS,
        slotGapsMs: after.slotGapsMs.slice(firstGap),
        coldSlotGapsMs: before.slotGapsMs,
        callbackAnswersMs: after.callbackAnswersMs.slice(before.callbackAnswersMs.length),
        inputReadsMs: after.inputReadsMs.slice(before.inputReadsMs.length),
        stagedInputsRead: after.stagedInputsRead - before.stagedInputsRead,
        pollsPerGeneration: (after.polls - before.polls) / queued.ids.length,
        cycleShareMedian: percentile(cycleShares(after.completedAtMs.slice(before.completedAtMs.length), queued.committedAt, slots, options.latencyMs).sort((a, b) => a - b), 0.5),
      };
    } finally {
      await started.stop();
    }
  };
  const idealPerSecond = slots / (options.latencyMs / 1000);
  const polling = await timedRun(false);
  const timed = await timedRun(true);
  const perSecond = timed.ids.length / timed.providerDoneS;
  const inputReadMeanMs = timed.inputReadsMs.reduce((sum, ms) => sum + ms, 0) / Math.max(1, timed.inputReadsMs.length);
  return {
    kind,
    latencyL: {
      latencyMs: options.latencyMs,
      slots,
      generations: timed.ids.length,
      seconds: timed.providerDoneS,
      perSecond,
      idealPerSecond,
      shareOfIdeal: perSecond / idealPerSecond,
      cycleShareMedian: timed.cycleShareMedian,
      succeededShareOfIdeal: timed.ids.length / timed.succeededS / idealPerSecond,
      slotGaps: spreadOf(timed.slotGapsMs),
      coldSlotGaps: spreadOf(timed.coldSlotGapsMs),
      callbackAnswered: spreadOf(timed.callbackAnswersMs),
      inputReadMeanMs,
      inputReadP99Ms: spreadOf(timed.inputReadsMs).p99Ms,
      stagedInputsRead: timed.stagedInputsRead,
      shareOfIdealWithReads: perSecond / (slots / ((options.latencyMs + inputReadMeanMs) / 1000)),
      pollsPerGeneration: timed.pollsPerGeneration,
    },
    latencyLPolling: {
      perSecond: polling.ids.length / polling.providerDoneS,
      shareOfIdeal: polling.ids.length / polling.providerDoneS / idealPerSecond,
      cycleShareMedian: polling.cycleShareMedian,
      slotGaps: spreadOf(polling.slotGapsMs),
      pollsPerGeneration: polling.pollsPerGeneration,
    },
  };
}

const photoNames: Record<PhotoKind, string> = { flat: '256x256 flat grey photo', face: '640x800 face photo' };

/**
 * The most CPU a succeeded generation may take, in bare previews of its result: on the face photo
 * the preview is most of the work, on the flat one the pipeline's own steps weigh more.
 */
const cpuGoals: Record<PhotoKind, number> = { flat: 1.6, face: 1.05 };

function bareRuns(run: LatencyZeroRun): string {
  return run.barePreviewRunsMs.length === 2
    ? `${run.barePreviewRunsMs[0].toFixed(1)} before the run, ${run.barePreviewRunsMs[1].toFixed(1)} after`
    : `${run.barePreviewRunsMs[0].toFixed(1)} after the run`;
}

function totalCpuMs(run: LatencyZeroRun): number {
  const cpu = run.cpuMsPerGeneration;
  return cpu.web + cpu.worker + cpu.media + cpu.postgres;
}

export function formatGenerationBench(result: GenerationBenchResult): string {
  return [
    '## Generations pipeline (one web, one worker and one media process, provider simulator on loopback)',
    `raw pg-boss, same database: ${result.pgBossJobsPerSecond.toFixed(0)} no-op jobs/s (insert + 8 work() loops of batch 200)`,
    ...result.latencyZero.flatMap((zero) => {
      const cpu = zero.cpuMsPerGeneration;
      const total = totalCpuMs(zero);
      return [
        `latency 0, ${zero.slots} slots, ${zero.generations} generations created by POST /v1/generations from the ${photoNames[zero.photo]}: ${zero.succeededPerSecond.toFixed(1)}/s succeeded`
          + ` (${((zero.succeededPerSecond / result.pgBossJobsPerSecond) * 100).toFixed(1)}% of raw pg-boss jobs/s)`,
        `  CPU per succeeded generation: web ${cpu.web.toFixed(1)} ms, worker ${cpu.worker.toFixed(1)} ms, media ${cpu.media.toFixed(1)} ms, Postgres ${cpu.postgres.toFixed(1)} ms;`
          + ` total ${total.toFixed(1)} ms = ${(total / zero.barePreviewCpuMs).toFixed(2)}x a bare sharp WebP thumb + blurhash of the same image (${zero.barePreviewCpuMs.toFixed(1)} ms; ${bareRuns(zero)}) (goal <= ${cpuGoals[zero.photo]}x)`,
        `  Postgres's part by whose it is: ${Object.entries(zero.postgresByClient).filter(([, ms]) => ms >= 0.05).sort(([, a], [, b]) => b - a)
          .map(([owner, ms]) => `${owner} ${ms.toFixed(1)} ms`).join(', ')}`,
      ];
    }),
    ...result.pools.map(formatPool),
  ].join('\n');
}

/** The timed pool of one provider kind, a few lines. */
function formatPool(pool: PoolRun): string {
  const { latencyL: timed } = pool;
  return [
    `${pool.kind}: latency ${timed.latencyMs} ms, ${timed.slots} slots, ${timed.generations} generations: median of the ${timed.generations / timed.slots} cycles ${(timed.cycleShareMedian * 100).toFixed(1)}% of S/L (goal >= 97%);`
      + ` the whole run ${timed.perSecond.toFixed(2)}/s vs ideal ${timed.idealPerSecond.toFixed(2)}/s = ${(timed.shareOfIdeal * 100).toFixed(1)}% of S/L to the provider's end of the last task; to the last one succeeded (its result copied, its preview made): ${(timed.succeededShareOfIdeal * 100).toFixed(1)}%`,
    `slot freed at the provider -> next submission on it (${timed.slotGaps.count} hand-overs): p50 ${timed.slotGaps.p50Ms} ms, p99 ${timed.slotGaps.p99Ms} ms, max ${timed.slotGaps.maxMs} ms (goal < 20 / < 50 ms);`
      + ` its first part, task end -> the web role's answer to the callback (slot freed, NOTIFY sent): p50 ${timed.callbackAnswered.p50Ms} ms, p99 ${timed.callbackAnswered.p99Ms} ms`
      + (timed.coldSlotGaps.count ? `; cold (the ${timed.coldSlotGaps.count} hand-overs of the warm-up cycles, the first of these processes): p50 ${timed.coldSlotGaps.p50Ms} ms, p99 ${timed.coldSlotGaps.p99Ms} ms` : ''),
    `the provider's own reading of a task's photo before its latency (from its file store when staged ahead, ${timed.stagedInputsRead} of ${timed.generations}, else downloaded from the embedded object store; its header checked, the pixels decoded as the model runs): mean ${timed.inputReadMeanMs.toFixed(1)} ms, p99 ${timed.inputReadP99Ms} ms;`
      + ` against S / (L + that mean) the throughput is ${(timed.shareOfIdealWithReads * 100).toFixed(1)}%`,
    `the same with every callback lost (polling alone, same run): median cycle ${(pool.latencyLPolling.cycleShareMedian * 100).toFixed(1)}%, whole run ${(pool.latencyLPolling.shareOfIdeal * 100).toFixed(1)}% of S/L, hand-over p50 ${pool.latencyLPolling.slotGaps.p50Ms} ms, p99 ${pool.latencyLPolling.slotGaps.p99Ms} ms`,
    `polls of a task's state per generation: ${timed.pollsPerGeneration.toFixed(1)} with callbacks (a fallback while they arrive), ${pool.latencyLPolling.pollsPerGeneration.toFixed(1)} with every callback lost`,
  ].join('\n');
}

/** The pool's two figures for one provider kind. */
function reportPoolFigures(pool: PoolRun): void {
  const { latencyL: timed } = pool;
  reportFigure({
    figure: `pipeline on ${pool.kind} at provider latency ${timed.latencyMs} ms, ${timed.slots} slots: throughput / ideal S/L, median of ${timed.generations / timed.slots} cycles`,
    value: `${timed.cycleShareMedian.toFixed(3)} (whole run ${timed.shareOfIdeal.toFixed(3)}, ${timed.perSecond.toFixed(2)}/s)`,
    baseline: `ideal ${timed.idealPerSecond.toFixed(2)}/s; polling alone ${pool.latencyLPolling.cycleShareMedian.toFixed(3)} (whole run ${pool.latencyLPolling.shareOfIdeal.toFixed(3)}); to the last one succeeded ${timed.succeededShareOfIdeal.toFixed(3)}; ${timed.shareOfIdealWithReads.toFixed(3)} of S / (L + the provider's own photo read, ${timed.inputReadMeanMs.toFixed(1)} ms)`,
    goal: '>= 0.97',
    met: timed.cycleShareMedian >= 0.97,
  });
  reportFigure({
    figure: `${pool.kind}: slot freed at the provider -> next submission on it, p50 / p99`,
    value: `${timed.slotGaps.p50Ms} / ${timed.slotGaps.p99Ms} ms (${timed.slotGaps.count} hand-overs, the slowest ${timed.slotGaps.maxMs} ms; of which task end -> callback answered ${timed.callbackAnswered.p50Ms} / ${timed.callbackAnswered.p99Ms} ms)`,
    baseline: `polling alone ${pool.latencyLPolling.slotGaps.p50Ms} / ${pool.latencyLPolling.slotGaps.p99Ms} ms`
      + (timed.coldSlotGaps.count ? `; cold, the warm-up's ${timed.coldSlotGaps.count} ${timed.coldSlotGaps.p50Ms} / ${timed.coldSlotGaps.p99Ms} ms` : ''),
    goal: '< 20 / < 50 ms',
    met: timed.slotGaps.p50Ms < 20 && timed.slotGaps.p99Ms < 50,
  });
}

function reportGenerationFigures(result: GenerationBenchResult): void {
  result.pools.forEach(reportPoolFigures);
  for (const zero of result.latencyZero) {
    const cpu = zero.cpuMsPerGeneration;
    const total = totalCpuMs(zero);
    reportFigure({
      figure: `CPU per succeeded generation at latency 0 from the ${photoNames[zero.photo]}: web / worker / media / Postgres`,
      value: `${cpu.web.toFixed(1)} / ${cpu.worker.toFixed(1)} / ${cpu.media.toFixed(1)} / ${cpu.postgres.toFixed(1)} ms = ${total.toFixed(1)} ms, ${(total / zero.barePreviewCpuMs).toFixed(2)}x the bare preview (${zero.succeededPerSecond.toFixed(1)} succeeded/s)`,
      baseline: `bare sharp WebP thumb + blurhash of the same result ${zero.barePreviewCpuMs.toFixed(1)} ms (${bareRuns(zero)}); raw pg-boss ${result.pgBossJobsPerSecond.toFixed(0)} jobs/s`,
      goal: `<= ${cpuGoals[zero.photo]}x the bare preview`,
      met: total <= cpuGoals[zero.photo] * zero.barePreviewCpuMs,
    });
  }
}

function generationOptions(): GenerationBenchOptions {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '300' },
      'warm-up': { type: 'string', default: '100' },
      photos: { type: 'string', default: 'flat,face' },
      'zero-slots': { type: 'string', default: '64' },
      'latency-ms': { type: 'string', default: '1500' },
      slots: { type: 'string', default: '8' },
      cycles: { type: 'string', default: '15' },
      'warm-up-cycles': { type: 'string', default: '3' },
      kind: { type: 'string', default: 'simulator' },
      kinds: { type: 'string', default: providerKinds.join(',') },
      'pool-only': { type: 'boolean', default: false },
    },
  });
  const whole = (name: keyof typeof values, min: number): number => wholeOption(values, name, min);
  const kindOption = (flag: string, value: unknown): ProviderKind => {
    if (!isProviderKind(value)) throw new Error(`--${flag} takes ${providerKinds.join(', ')}, not ${value}`);
    return value;
  };
  return {
    count: whole('count', 1),
    warmUp: whole('warm-up', 0),
    photos: String(values.photos).split(',').map((photo) => {
      if (photo !== 'flat' && photo !== 'face') throw new Error(`--photos takes flat and face, not ${photo}`);
      return photo;
    }),
    zeroSlots: whole('zero-slots', 2),
    latencyMs: whole('latency-ms', 1),
    slots: whole('slots', 2),
    cycles: whole('cycles', 1),
    warmUpCycles: whole('warm-up-cycles', 0),
    kind: kindOption('kind', values.kind),
    kinds: String(values.kinds).split(',').map((kind) => kindOption('kinds', kind)),
    latencyZero: !values['pool-only'],
  };
}

if (require.main === module) {
  runBench(async (stack, options) => {
    const result = await benchGenerations(stack, options);
    console.log(formatGenerationBench(result));
    reportGenerationFigures(result);
  }, generationOptions);
}
