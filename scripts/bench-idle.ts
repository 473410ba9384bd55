import { parseArgs } from 'node:util';
import { signAccessToken } from '../api/tokens/access-token';
import type { ScratchStack } from '../process/scratch-stack';
import type { TaskTimes } from '../simulators/providers/provider-simulator';
import { reportFigure } from './bench-figures';
import { wholeOption } from './bench-options';
import { runBench } from './bench-runner';
import { benchFixture, startPipelineProcesses, type PipelineProcesses } from './bench-generations';
import { percentile } from './load';

/**
 * `node dist/scripts/bench-idle.js [--count 24] [--fresh-warm-up 20] [--warm-up 300] [--latency-ms 300]`
 *
 * What one user waits for on an idle system: one `web`, one `worker` and one `media` process (as
 * `bench-generations.js` starts them), the provider simulator at `--latency-ms`, and one user who
 * creates `--count` generations one after the other, each through `POST /v1/generations` and then
 * followed on its stream until `succeeded` arrives. The figure is that time minus the provider's
 * latency: what the service itself adds. Each generation's time is cut into consecutive steps by
 * the moments the bench, the simulator (`timesOf`) and the generation's own row saw, so the steps
 * add up to the figure and a regression names its step. The rows' times are Postgres's `now()`:
 * the start of the transaction that wrote them. The same processes are measured twice: just
 * started (after `--fresh-warm-up` generations), and once they have served `--warm-up` (the figure).
 */
export interface IdleBenchOptions {
  count: number;
  /**
   * Generations through the processes before the first measured ones: processes just started, their
   * connections open and statements prepared on each connection with the plan Postgres keeps for
   * them. A statement is prepared on its second run on a connection and planned anew on each of its
   * first five runs as prepared (Postgres then keeps a generic plan when it costs no more): after 3
   * generations most were still planned on each run.
   */
  freshWarmUp: number;
  /**
   * Generations through the same processes before the figure's measured ones (those measured fresh
   * among them), so that they are measured as an idle system that has run before finds them: V8 has
   * compiled a generation's paths for what they meet, which takes far more generations than the
   * statements' preparation (`docs/benchmarks.md`).
   */
  warmUp: number;
  latencyMs: number;
}

/** The steps of one generation in the order they happen; each is the time from the previous point to its own. */
const steps = [
  ['request', 'POST sent -> 202 answered (the reserve, the row, its ticket, the commit)'],
  ['pickup', '-> the submission reaches the provider (NOTIFY, the dispatcher\'s round, the submission\'s request)'],
  ['provider read', '-> the provider read the photo (its own time before its latency)'],
  ['latency overrun', '-> the task ended, minus the latency (the simulator\'s timer)'],
  ['callback', '-> the callback recorded (the provider\'s POST, the web role\'s statement)'],
  ['result fetch', '-> the result file served (the NOTIFY, the poll loop\'s claim reading the callback\'s answer, the download asked)'],
  ['copy + preview', '-> the success\'s transaction began (the download, the copy, the preview)'],
  ['commit + stream', '-> succeeded on the stream (the commit, the NOTIFY, the stream\'s read and write)'],
] as const;

type Step = (typeof steps)[number][0];

export interface IdleBenchResult {
  latencyMs: number;
  /** The processes just started, and once they have served `warmUp` generations (the figure). */
  fresh: IdleRun;
  warm: IdleRun;
}

export interface IdleRun {
  /** Generations the processes had served before these. */
  after: number;
  count: number;
  /** Per generation: ms from the POST to `succeeded` on its stream, minus the provider's latency. */
  overheadMs: number[];
  /** The median and the 90th percentile ms of each step. */
  stepMs: Record<Step, { p50: number; p90: number; max: number }>;
  /** The steps of the slowest generation. */
  slowest: Record<Step, number>;
}

interface Follower {
  token: string;
  effectId: string;
  uploadId: string;
}

/** Creates one generation and follows its stream: answers its id and the epoch ms of the POST, its answer and `succeeded`. */
async function oneGeneration(webUrl: string, { token, effectId, uploadId }: Follower): Promise<{ id: string; sentAt: number; answeredAt: number; succeededAt: number }> {
  const sentAt = Date.now();
  const response = await fetch(`${webUrl}/v1/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ effect_id: effectId, characters: [[uploadId]] }),
  });
  const answeredAt = Date.now();
  const body = await response.json() as { id?: string };
  if (response.status !== 202 || !body.id) throw new Error(`POST /v1/generations answered ${response.status}: ${JSON.stringify(body)}`);
  const stream = await fetch(`${webUrl}/v1/generations/${body.id}/stream`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
  if (stream.status !== 200 || !stream.body) throw new Error(`the stream answered ${stream.status}`);
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of stream.body) {
    const seenAt = Date.now();
    text += decoder.decode(chunk as Uint8Array, { stream: true });
    const statuses = [...text.matchAll(/^data: (.*)$/gm)].map((match) => (JSON.parse(match[1]) as { status: string }).status);
    if (statuses.includes('failed')) throw new Error(`generation ${body.id} failed`);
    if (statuses.includes('succeeded')) return { id: body.id, sentAt, answeredAt, succeededAt: seenAt };
  }
  throw new Error(`the stream of ${body.id} closed before succeeded`);
}

/** The row's times (epoch ms) of a generation. */
async function rowTimes(stack: ScratchStack, id: string): Promise<{ callbackRecorded: number; succeedBegan: number }> {
  const row = await stack.services.db('generations').where({ id }).first(
    stack.services.db.raw('extract(epoch from task_callback_at) * 1000 as callback_recorded'),
    stack.services.db.raw('extract(epoch from finished_at) * 1000 as succeed_began'),
  );
  return { callbackRecorded: Number(row.callback_recorded), succeedBegan: Number(row.succeed_began) };
}

export async function benchIdle(stack: ScratchStack, options: IdleBenchOptions): Promise<IdleBenchResult> {
  const { services } = stack;
  const processes: PipelineProcesses = await startPipelineProcesses(stack, 'simulator', options.latencyMs, 2);
  try {
    const { userId, effectId, uploadId } = await benchFixture(services, Math.max(options.warmUp, options.freshWarmUp + options.count) + options.count, 'simulator');
    const follower = { token: await signAccessToken(services.config.tokenSecret, userId, 3600), effectId, uploadId };
    let served = 0;
    /** More generations until the processes have served `warmUp` (the measured ones count), then a measured run. */
    const runAfter = async (warmUp: number) => {
      for (; served < warmUp; served += 1) await oneGeneration(processes.webUrl, follower);
      const run = await measuredRun(stack, processes, follower, options, served);
      served += options.count;
      return run;
    };
    const fresh = await runAfter(options.freshWarmUp);
    const warm = await runAfter(options.warmUp);
    return { latencyMs: options.latencyMs, fresh, warm };
  } finally {
    await processes.stop();
  }
}

/** `options.count` generations one after the other, each cut into its steps. */
async function measuredRun(stack: ScratchStack, processes: PipelineProcesses, follower: Follower, options: IdleBenchOptions, after: number): Promise<IdleRun> {
  const overheadMs: number[] = [];
  const stepMs = new Map<Step, number[]>(steps.map(([step]) => [step, []]));
  let slowest: Record<Step, number> | null = null;
  for (let index = 0; index < options.count; index += 1) {
    const seen = await oneGeneration(processes.webUrl, follower);
    const [task] = processes.simulator.timesOf(seen.id) as (TaskTimes | undefined)[];
    if (!task || task.finished === null) throw new Error(`the provider holds no finished task of ${seen.id}`);
    const row = await rowTimes(stack, seen.id);
    const points: Record<Step, number> = {
      request: seen.answeredAt,
      pickup: task.received,
      'provider read': task.started,
      'latency overrun': task.finished - options.latencyMs,
      callback: row.callbackRecorded,
      'result fetch': task.resultServed ?? Number.NaN,
      'copy + preview': row.succeedBegan,
      'commit + stream': seen.succeededAt,
    };
    let previous = seen.sentAt;
    const these = {} as Record<Step, number>;
    for (const [step] of steps) {
      these[step] = Math.round(points[step] - previous);
      stepMs.get(step)!.push(these[step]);
      // The latency itself is the provider's: the step after it counts from its end.
      previous = step === 'latency overrun' ? task.finished : points[step];
    }
    const overhead = Math.round(seen.succeededAt - seen.sentAt - options.latencyMs);
    if (overhead > Math.max(...overheadMs)) slowest = these;
    overheadMs.push(overhead);
  }
  return {
    after,
    count: options.count,
    overheadMs,
    stepMs: Object.fromEntries(steps.map(([step]) => [step, spread(stepMs.get(step)!)])) as IdleRun['stepMs'],
    slowest: slowest!,
  };
}

/** p50, p90 and max of whole milliseconds (nearest rank: whole milliseconds too). */
function spread(values: number[]): { p50: number; p90: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), max: sorted.at(-1) ?? 0 };
}

function stepsLine(run: IdleRun): string {
  return steps.map(([step]) => `${step} ${run.stepMs[step].p50}`).join(', ');
}

function formatRun(run: IdleRun, latencyMs: number, which: string): string[] {
  const { p50, p90, max } = spread(run.overheadMs);
  return [
    `${which}, after ${run.after} generations: POST /v1/generations -> succeeded on its stream, minus the provider's ${latencyMs} ms, one user, ${run.count} one after the other: p50 ${p50} ms, p90 ${p90} ms, max ${max} ms`,
    'each step, one after the other: p50 / p90 ms, and in the slowest generation',
    ...steps.map(([step, what]) => `  ${step.padEnd(16)} ${[run.stepMs[step].p50, run.stepMs[step].p90, run.slowest[step]].map((ms) => String(ms).padStart(4)).join(' / ')}  ${what}`),
  ];
}

export function formatIdleBench(result: IdleBenchResult): string {
  return [
    `## A lone generation on an idle system (one web, one worker and one media process, provider simulator at ${result.latencyMs} ms)`,
    ...formatRun(result.warm, result.latencyMs, 'Processes that have run (the figure; goal p50 <= 30, p90 <= 60 ms)'),
    ...formatRun(result.fresh, result.latencyMs, 'The same processes just started'),
  ].join('\n');
}

function reportIdleFigures(result: IdleBenchResult): void {
  const { p50, p90, max } = spread(result.warm.overheadMs);
  const fresh = spread(result.fresh.overheadMs);
  reportFigure({
    figure: `idle system: POST /v1/generations -> succeeded on its stream, minus the provider's latency (${result.latencyMs} ms), one user, ${result.warm.count} one after the other, processes that have served ${result.warm.after} generations: p50 / p90`,
    value: `${p50} / ${p90} ms (max ${max} ms)`,
    baseline: `median ms per step: ${stepsLine(result.warm)}; the same processes just started (after ${result.fresh.after}): p50 ${fresh.p50} / p90 ${fresh.p90} ms`,
    goal: 'p50 <= 30 ms, p90 <= 60 ms',
    met: p50 <= 30 && p90 <= 60,
  });
}

function idleOptions(): IdleBenchOptions {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '24' },
      'fresh-warm-up': { type: 'string', default: '20' },
      'warm-up': { type: 'string', default: '300' },
      'latency-ms': { type: 'string', default: '300' },
    },
  });
  return {
    count: wholeOption(values, 'count', 1),
    freshWarmUp: wholeOption(values, 'fresh-warm-up', 0),
    warmUp: wholeOption(values, 'warm-up', 0),
    latencyMs: wholeOption(values, 'latency-ms', 1),
  };
}

if (require.main === module) {
  runBench(async (stack, options) => {
    const result = await benchIdle(stack, options);
    console.log(formatIdleBench(result));
    reportIdleFigures(result);
  }, idleOptions);
}
