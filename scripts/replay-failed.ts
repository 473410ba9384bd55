import '../runtime-check';
import { parseArgs } from 'node:util';
import { isUuid } from '../api/http/validation';
import { recordReplay } from '../db/generations/record-replay';
import { loadConfig } from '../config';
import { createLogger, flushLogs } from '../logger';
import { startInfrastructure } from '../infrastructure';
import type { Services } from '../services';
import { findLaunchableEffect } from '../api/catalog/launchable';
import { reserveAndQueue, type GenerationPlan } from '../api/generations/create';
import { findStudioCategory } from '../api/studio/categories';
import type { GenerationRow } from '../db/generations/model';

const usage = `Re-runs failed generations as NEW generations (the failed ones stay as they are, refunded).

usage: npm run replay-failed -- [--id <uuid>]... [--error-code <code>] [--since <time>] [--until <time>] [--limit <n>] [--apply]

  --id <uuid>          a failed generation (repeatable)
  --error-code <code>  failed generations with this error_code (provider_error, pool_timeout, ...)
  --since <time>       failed at or after this time (ISO 8601, e.g. 2026-11-23T10:00:00Z)
  --until <time>       failed before this time
  --limit <n>          at most n generations (default 1000)
  --apply              do it; without it nothing changes and the run only says what it would do
  --help               this text

At least one of --id, --error-code, --since is required. Each replay reserves the effect's (or studio
category's) CURRENT cost from the user (skipped, and named, when they cannot pay), with the same photos
(and prompt), in one transaction that also records the replay on the failed generation: a failed
generation is replayed at most once, and a dry run lists the ones already replayed with their new id.
A generation its owner cancelled is never replayed.`;

/** A mistake in the command line: the script prints it with the usage, not a stack trace. */
export class UsageError extends Error {}
export interface ReplayOptions {
  ids: string[];
  errorCode: string | null;
  since: Date | null;
  until: Date | null;
  limit: number;
  apply: boolean;
}

export interface ReplayOutcome {
  failedId: string;
  userId: string;
  /**
   * `replayed` with the new id (`would replay` in a dry run), `already replayed` with the id of the
   * attempt made before, or `skipped` with the reason.
   */
  action: 'replayed' | 'would replay' | 'already replayed' | 'skipped';
  newId: string | null;
  reason: string | null;
}

export async function replayFailed(services: Services, options: ReplayOptions): Promise<ReplayOutcome[]> {
  const { db, storage } = services;
  if (!options.ids.length && !options.errorCode && !options.since) throw new UsageError('name the generations: --id, --error-code or --since');
  const notIds = options.ids.filter((id) => !isUuid(id));
  if (notIds.length) throw new UsageError(`not a generation id: ${notIds.join(', ')}`);
  const query = db('generations').where({ status: 'failed' }).orderBy('finished_at').limit(options.limit);
  if (options.ids.length) query.whereIn('id', options.ids);
  if (options.errorCode) query.andWhere({ error_code: options.errorCode });
  if (options.since) query.andWhere('finished_at', '>=', options.since);
  if (options.until) query.andWhere('finished_at', '<', options.until);
  const failed: GenerationRow[] = await query.select('*');

  const outcomes: ReplayOutcome[] = [];
  for (const generation of failed) {
    const skip = (reason: string) => outcomes.push({ failedId: generation.id, userId: generation.user_id, action: 'skipped', newId: null, reason });
    const replayedBefore = (newId: string) => outcomes.push({ failedId: generation.id, userId: generation.user_id, action: 'already replayed', newId, reason: null });
    if (generation.replayed_as) { replayedBefore(generation.replayed_as); continue; }
    if (generation.error_code === 'canceled') { skip('cancelled by its owner'); continue; }
    const plan = await replayPlan(services, generation);
    if (typeof plan === 'string') { skip(plan); continue; }
    const missing = (await Promise.all(generation.inputs.map((input) => storage.stat(input.object_key)))).some((object) => object === null);
    if (missing) { skip('a photo is no longer in storage'); continue; }
    if (!options.apply) {
      const user: { balance: number } | undefined = await db('users').where({ id: generation.user_id }).first('balance');
      if (!user || user.balance < plan.cost) skip(`the user cannot pay ${plan.cost} (balance ${user?.balance ?? 0})`);
      else outcomes.push({ failedId: generation.id, userId: generation.user_id, action: 'would replay', newId: null, reason: `cost ${plan.cost}` });
      continue;
    }
    const refusal = Symbol('refused');
    const refused: { why?: string; replayedAs?: string } = {};
    const newId = await db.transaction(async (trx) => {
      const started = await reserveAndQueue(trx, services, generation.user_id, plan);
      if (started === 'insufficient' || started === 'queue_full') {
        refused.why = started === 'insufficient' ? `the user cannot pay ${plan.cost}` : 'the queue is full';
        throw refusal;
      }
      // Another run replayed it since it was read: this attempt and its reserve roll back.
      if (!(await recordReplay(trx, generation.id, started))) {
        refused.replayedAs = (await trx('generations').where({ id: generation.id }).first('replayed_as')).replayed_as;
        throw refusal;
      }
      return started;
    }).catch((error: unknown) => {
      if (error === refusal) return null;
      throw error;
    });
    if (newId) outcomes.push({ failedId: generation.id, userId: generation.user_id, action: 'replayed', newId, reason: `cost ${plan.cost}` });
    else if (refused.replayedAs) replayedBefore(refused.replayedAs);
    else skip(refused.why ?? 'refused');
  }
  return outcomes;
}

/** A new attempt at today's price of the effect or studio category, or why there is none. */
async function replayPlan({ db }: Services, generation: GenerationRow): Promise<GenerationPlan | string> {
  const same = { prompt: generation.prompt, inputs: generation.inputs };
  if (generation.kind === 'studio') {
    const category = await findStudioCategory(db, generation.studio_category_id!);
    if (!category) return 'the studio category is gone or disabled';
    return { kind: 'studio', effectId: null, studioCategoryId: category.id, cost: category.cost, outputType: category.output_type, model: category.model, ...same };
  }
  const effect = await findLaunchableEffect(db, generation.effect_id!);
  if (!effect || effect.hidden) return 'the effect is gone or hidden';
  if (effect.private_to !== null && effect.private_to !== generation.user_id) return 'the effect is its author\'s only now';
  if (effect.cost <= 0) return 'the effect has no price';
  return { kind: 'effect', effectId: effect.id, studioCategoryId: null, cost: effect.cost, outputType: effect.output_type, model: effect.model, ...same };
}

function describe(outcome: ReplayOutcome): string {
  const target = outcome.newId ? ` -> ${outcome.newId}` : '';
  return `${outcome.action.padEnd(12)} ${outcome.failedId} (user ${outcome.userId})${target}${outcome.reason ? `: ${outcome.reason}` : ''}`;
}

/** The options of a command line, or null for `--help`; a mistake is a UsageError. */
export function parseReplayArguments(argv: string[]): ReplayOptions | null {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        id: { type: 'string', multiple: true, default: [] },
        'error-code': { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        limit: { type: 'string', default: '1000' },
        apply: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return null;
  const time = (text: string | undefined) => {
    if (text === undefined) return null;
    const parsed = new Date(text);
    if (Number.isNaN(parsed.getTime())) throw new UsageError(`not a time: ${text}`);
    return parsed;
  };
  if (!/^[1-9]\d{0,6}$/.test(values.limit!)) throw new UsageError(`--limit must be a positive whole number: ${values.limit}`);
  const options: ReplayOptions = {
    ids: values.id ?? [],
    errorCode: values['error-code'] ?? null,
    since: time(values.since),
    until: time(values.until),
    limit: Number(values.limit),
    apply: values.apply ?? false,
  };
  if (!options.ids.length && !options.errorCode && !options.since) throw new UsageError('name the generations: --id, --error-code or --since');
  return options;
}

async function main(): Promise<void> {
  const options = parseReplayArguments(process.argv.slice(2));
  if (!options) {
    console.log(usage);
    return;
  }
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  try {
    const outcomes = await replayFailed(infrastructure.services, options);
    for (const outcome of outcomes) console.log(describe(outcome));
    const count = (action: ReplayOutcome['action']) => outcomes.filter((outcome) => outcome.action === action).length;
    console.log(options.apply
      ? `${count('replayed')} replayed, ${count('already replayed')} already replayed before, ${count('skipped')} skipped`
      : `dry run: ${count('would replay')} would be replayed, ${count('already replayed')} already replayed, ${count('skipped')} skipped; add --apply to do it`);
  } finally {
    await infrastructure.stop();
    await flushLogs(log);
  }
}

if (require.main === module) {
  main().catch((error) => {
    if (error instanceof UsageError) {
      console.error(`replay-failed: ${error.message}\n\n${usage}`);
      process.exit(2);
    }
    console.error(error);
    process.exit(1);
  });
}
