import '../process/runtime-check';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { demoPhoto } from '../media/demo-assets';
import { startProviderSimulator } from '../simulators/providers/provider-simulator';
import { simulatedAccounts, simulatedApiEnv } from '../simulators/providers/simulated-kinds';
import { startScratchStack } from '../process/scratch-stack';
import { parseOptions, type LoadTestOptions } from './loadtest/options';
import { chartPage, chartPng, creditInvariant, loadTestCharts, percentiles, sampleGenerations, storedGenerations, type TimelinePoint } from './loadtest/report';
import { routeEffectsOn } from './loadtest/provider-kind';
import { openServiceLog, startServiceProcess, type ServiceProcess } from './loadtest/service';
import { runUser, type ClientStats, type GenerationRecord } from './loadtest/user';

/**
 * `node dist/scripts/loadtest.js [flags]`: drives the real service end to end. It starts a fresh
 * Postgres and object store (the test harness's), the provider simulator with M accounts x K slots
 * of one provider kind (`--kind`: it speaks that kind's protocol, the catalog's effects are routed on
 * it) and latency L, and the service processes (`node dist/main.js <roles>`); then N guest users each
 * sign in, upload a photo through the presigned POST, create generations and follow their streams.
 * It reports throughput against the ideal M*K/L, slot utilisation, queue wait and time to terminal
 * (p50/p95/p99), the most streams open at once, and two invariants checked in SQL: no generation
 * lost, credits conserved. Writes `loadtest-report.json`, `loadtest-report.html` (charts) and the
 * services' warnings (`loadtest-services.log`) under `--out` (default `.data/loadtest`).
 */
export async function runLoadTest(options: LoadTestOptions, progress: (line: string) => void = () => undefined) {
  const stack = await startScratchStack();
  const { db } = stack.services;
  const accounts = simulatedAccounts(options.kind, Array.from({ length: options.accounts }, (_, index) => `loadtest-account-${index + 1}`), options.slots);
  const simulator = await startProviderSimulator({ latencyMs: options.latencyMs, failureRate: options.failureRate, accounts: accounts.keys });
  mkdirSync(options.outDir, { recursive: true });
  const serviceLog = openServiceLog(path.join(options.outDir, 'loadtest-services.log'));
  const env: Record<string, string> = {
    // The users launch a demo effect (winter-portrait), so the demo catalog is seeded.
    ...stack.serviceEnv({ SEED_DEMO_CATALOG: '1' }),
    PROVIDER_URL: simulator.url,
    ...simulatedApiEnv(options.kind, simulator.url),
    ...accounts.env,
    // Every simulated user comes from one address: the per-source and per-user budgets are not under test.
    RATE_AUTH_BURST: '1000000',
    RATE_WRITE_BURST: '1000000',
    RATE_READ_BURST: '1000000',
  };
  const processes: ServiceProcess[] = [];
  const capacity = options.accounts * options.slots;
  try {
    // One at a time: the first one seeds the demo catalog into the empty database.
    for (const roles of options.processes) {
      progress(`starting "${roles}"`);
      const started = await startServiceProcess(roles, env, serviceLog);
      processes.push(started);
      // The provider calls a web role back: processes started after it name it in their callback
      // links (by default each names its own listener, where a worker alone answers nothing).
      if (started.url !== null && env.PROVIDER_CALLBACK_BASE_URL === undefined) env.PROVIDER_CALLBACK_BASE_URL = started.url;
    }
    await routeEffectsOn(db, options.kind);
    const webUrls = processes.map((service) => service.url).filter((url): url is string => url !== null);
    const effect = await (await fetch(`${webUrls[0]}/v1/effects/${options.effect}`)).json() as { id?: string };
    if (!effect.id) throw new Error(`effect ${options.effect} not found: ${JSON.stringify(effect)}`);
    const photo = await demoPhoto();

    const stats: ClientStats = { usersDone: 0, streamsOpen: 0, maxStreamsOpen: 0, streamsOpened: 0, streamReopens: 0, streamsRefused: 0, failures: {} };
    const records: GenerationRecord[] = [];
    const runId = randomBytes(4).toString('hex');
    const started = performance.now();
    const deadline = Date.now() + options.deadlineS * 1000;
    const expected = options.users * options.perUser;
    const timeline: TimelinePoint[] = [];
    let sampling = false;
    const sample = async () => {
      if (sampling) return;
      sampling = true;
      try {
        const counts = await sampleGenerations(db);
        const busySlots = Object.values(simulator.stats().running).reduce((sum, held) => sum + held, 0);
        timeline.push({ t: (performance.now() - started) / 1000, ...counts, busySlots, streamsOpen: stats.streamsOpen });
        progress(progressLine(counts.finished, expected, counts, busySlots, capacity, stats, (performance.now() - started) / 1000));
      } finally {
        sampling = false;
      }
    };
    const sampler = setInterval(() => void sample().catch(() => undefined), 500);

    const users = Array.from({ length: options.users }, (_, index) => new Promise<void>((resolve, reject) => {
      setTimeout(() => runUser(index, {
        baseUrl: webUrls[index % webUrls.length], runId, effectIds: [effect.id!], photo, perUser: options.perUser, deadline, stats, records,
      }).then(resolve, reject), (index * options.rampS * 1000) / options.users);
    }));
    await Promise.all(users);
    clearInterval(sampler);
    await sample();

    const callbacksAnswered = simulator.stats().callbackAnswersMs.length;
    return await summarize({ options, records, stats, timeline, capacity, startedWall: Date.now() - (performance.now() - started), processes, serviceLog, db, callbacksAnswered });
  } finally {
    for (const service of processes.reverse()) await service.stop();
    await simulator.stop();
    serviceLog.stream.end();
    await stack.stop();
  }
}

async function summarize(run: {
  options: LoadTestOptions;
  records: GenerationRecord[];
  stats: ClientStats;
  timeline: TimelinePoint[];
  capacity: number;
  startedWall: number;
  processes: ServiceProcess[];
  /** Task callbacks the web role answered 2xx. */
  callbacksAnswered: number;
  serviceLog: { file: string; warnings: number; errors: number };
  db: Parameters<typeof storedGenerations>[0];
}) {
  const { options, records, stats, timeline, capacity, db } = run;
  const stored = await storedGenerations(db);
  const storedById = new Map(stored.map((row) => [row.id, row]));
  const terminal = stored.filter((row) => row.status === 'succeeded' || row.status === 'failed');
  const notTerminal = stored.filter((row) => row.status !== 'succeeded' && row.status !== 'failed');
  const missing = records.filter((record) => !storedById.has(record.id));
  const credits = await creditInvariant(db);

  // The busy window: first creation to last terminal status, in database time.
  const firstCreated = Math.min(...stored.map((row) => row.created_at.getTime()));
  const lastFinished = Math.max(...terminal.map((row) => row.finished_at!.getTime()));
  const windowS = terminal.length ? (lastFinished - firstCreated) / 1000 : 0;
  const idealPerS = capacity / (options.latencyMs / 1000);
  const achievedPerS = windowS > 0 ? terminal.length / windowS : 0;
  // While generations wait for a slot, every slot should be busy: the pool's own efficiency.
  const saturated = timeline.filter((point) => point.pending > 0);
  const busyWindow = timeline.filter((point) => point.finished < terminal.length || point.pending + point.processing > 0);
  const mean = (values: number[]) => (values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : 0);
  let saturatedFinished = 0;
  let saturatedSeconds = 0;
  for (let index = 1; index < timeline.length; index += 1) {
    if (timeline[index - 1].pending === 0) continue;
    saturatedFinished += timeline[index].finished - timeline[index - 1].finished;
    saturatedSeconds += timeline[index].t - timeline[index - 1].t;
  }
  const byErrorCode: Record<string, number> = {};
  for (const row of terminal) if (row.error_code) byErrorCode[row.error_code] = (byErrorCode[row.error_code] ?? 0) + 1;

  const report = {
    settings: { ...options, capacity },
    startedAt: new Date(run.startedWall).toISOString(),
    generations: {
      requested: options.users * options.perUser,
      created: records.length,
      stored: stored.length,
      succeeded: terminal.filter((row) => row.status === 'succeeded').length,
      failed: terminal.filter((row) => row.status === 'failed').length,
      byErrorCode,
    },
    throughput: {
      windowS: round(windowS),
      achievedPerS: round(achievedPerS),
      whileSaturatedPerS: saturatedSeconds > 0 ? round(saturatedFinished / saturatedSeconds) : null,
      idealPerS: round(idealPerS),
      ratioToIdeal: round(achievedPerS / idealPerS),
    },
    slots: {
      capacity,
      meanBusy: round(mean(busyWindow.map((point) => point.busySlots))),
      utilisation: round(mean(busyWindow.map((point) => point.busySlots)) / capacity),
      utilisationWhileSaturated: saturated.length ? round(mean(saturated.map((point) => point.busySlots)) / capacity) : null,
      peakBusy: Math.max(0, ...timeline.map((point) => point.busySlots)),
      meanLeasedWhileSaturated: saturated.length ? round(mean(saturated.map((point) => point.leasedSlots))) : null,
    },
    queueWaitMs: percentiles(stored.filter((row) => row.queue_wait_ms !== null).map((row) => row.queue_wait_ms!)),
    timeToTerminalMs: percentiles(terminal.map((row) => row.to_terminal_ms!)),
    clientTimeToTerminalMs: percentiles(records.filter((record) => record.terminalAt !== null).map((record) => record.terminalAt! - record.createdAt)),
    streams: {
      maxOpen: stats.maxStreamsOpen,
      opened: stats.streamsOpened,
      reopened: stats.streamReopens,
      refusedTooMany: stats.streamsRefused,
      terminalSeenOnStream: records.filter((record) => record.terminalAt !== null).length,
    },
    invariants: {
      noGenerationLost: missing.length === 0 && notTerminal.length === 0 && records.length === options.users * options.perUser
        && records.every((record) => storedById.get(record.id)?.status === record.status),
      notTerminal: notTerminal.length,
      missing: missing.length,
      creditsConserved: credits.conserved,
      credits,
    },
    clientFailures: stats.failures,
    provider: { callbacksAnswered: run.callbacksAnswered },
    service: { processes: run.processes.map((service) => service.roles), log: run.serviceLog.file, warnings: run.serviceLog.warnings, errors: run.serviceLog.errors },
    timeline,
  };
  return report;
}

type Report = Awaited<ReturnType<typeof runLoadTest>>;

const seconds = (ms: number | null | undefined) => (ms === null || ms === undefined ? '-' : (ms / 1000).toFixed(1));

/** What a reader looks at first, in order: printed as a table at the end, and atop the HTML page. */
function summaryRows(report: Report): [string, string][] {
  const { settings, generations, throughput, slots, queueWaitMs, timeToTerminalMs, streams, invariants, service } = report;
  const failures = Object.entries(generations.byErrorCode).map(([code, count]) => `${count} ${code}`).join(', ');
  return [
    ['settings', `${settings.users} users x ${settings.perUser} generations; ${settings.accounts} ${settings.kind} accounts x ${settings.slots} slots; latency ${settings.latencyMs} ms; failure rate ${settings.failureRate}; processes: ${service.processes.map((roles) => `"${roles}"`).join(', ')}`],
    ['generations', `${generations.created} created, ${generations.succeeded + generations.failed} terminal: ${generations.succeeded} succeeded, ${generations.failed} failed${failures ? ` (${failures})` : ''}`],
    ['throughput', `${throughput.achievedPerS}/s against the ideal M*K/L = ${throughput.idealPerS}/s (${throughput.ratioToIdeal}); ${throughput.whileSaturatedPerS ?? '-'}/s while the pool was saturated`],
    ['slot utilisation', `${slots.utilisation} (${slots.utilisationWhileSaturated ?? '-'} while saturated; ${slots.meanLeasedWhileSaturated ?? '-'} of ${slots.capacity} slots leased)`],
    ['queue wait p50 / p95 / p99', `${seconds(queueWaitMs.p50)} / ${seconds(queueWaitMs.p95)} / ${seconds(queueWaitMs.p99)} s`],
    ['time to terminal p50 / p95 / p99', `${seconds(timeToTerminalMs.p50)} / ${seconds(timeToTerminalMs.p95)} / ${seconds(timeToTerminalMs.p99)} s`],
    ['streams', `${streams.maxOpen} open at most; ${streams.opened} opened, ${streams.reopened} reopened, ${streams.refusedTooMany} refused; terminal status seen on its stream: ${streams.terminalSeenOnStream}`],
    ['invariants', `no generation lost: ${invariants.noGenerationLost}; credits conserved: ${invariants.creditsConserved}`],
    ['services log', `${service.warnings} warnings, ${service.errors} errors`],
  ];
}

/** Two aligned columns with a rule under the header, for a terminal. */
function textTable(rows: [string, string][]): string {
  const width = Math.max('measure'.length, ...rows.map(([name]) => name.length));
  return [`${'measure'.padEnd(width)}  result`, `${'-'.repeat(width)}  ${'-'.repeat(6)}`, ...rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`)].join('\n');
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function progressLine(finished: number, expected: number, counts: { pending: number; processing: number }, busySlots: number, capacity: number, stats: ClientStats, seconds: number): string {
  const width = 30;
  const done = Math.min(width, Math.round((finished / Math.max(1, expected)) * width));
  return `[${'#'.repeat(done)}${'.'.repeat(width - done)}] ${finished}/${expected} terminal | pending ${counts.pending} | processing ${counts.processing} | slots ${busySlots}/${capacity} | streams ${stats.streamsOpen} | ${seconds.toFixed(1)} s`;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const interactive = process.stderr.isTTY;
  let lastLine = 0;
  const report = await runLoadTest(options, (line) => {
    if (interactive) process.stderr.write(`\r${line.padEnd(120)}`);
    else if (Date.now() - lastLine > 5000 || line.startsWith('starting')) {
      lastLine = Date.now();
      process.stderr.write(`${line}\n`);
    }
  });
  if (interactive) process.stderr.write('\n');
  const jsonFile = path.resolve(options.outDir, 'loadtest-report.json');
  const htmlFile = path.resolve(options.outDir, 'loadtest-report.html');
  const pngFile = path.resolve(options.outDir, 'loadtest-chart.png');
  const charts = loadTestCharts(report.timeline, report.slots.capacity);
  const summary = summaryRows(report);
  writeFileSync(jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(htmlFile, chartPage(`Load test ${report.startedAt}`, charts, Object.fromEntries(summary)));
  writeFileSync(pngFile, await chartPng(charts));
  console.log(textTable(summary));
  console.log(`\nfull report (every figure, the timeline): ${jsonFile}\ncharts: ${htmlFile} and ${pngFile}\nthe services' warnings and errors: ${report.service.log}`);
  if (!report.invariants.noGenerationLost || !report.invariants.creditsConserved) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
