import '../runtime-check';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import { createLogger, flushLogs } from '../logger';
import { startInfrastructure } from '../infrastructure';
import type { Services } from '../services';
import { findLaunchableEffect } from '../api/catalog/launchable';
import { reserveAndQueue, type GenerationPlan } from '../api/generations/create';
import { findStudioCategory } from '../api/studio/categories';
import type { GenerationRow } from '../db/generations/model';

/**
 * Re-runs failed generations as NEW generations (the failed ones stay as they are, refunded):
 *
 *   node dist/scripts/replay-failed.js [--id <uuid>]... [--error-code <code>] [--since <time>] [--until <time>] [--limit <n>] [--apply]
 *
 * At least one of --id, --error-code, --since is required. Without --apply nothing changes: it
 * prints what it would do. With --apply each replay reserves the effect's (or studio category's)
 * CURRENT cost from the user (who is skipped, and told so, when they cannot pay), with the same
 * photos (and prompt), in one transaction per replay. A generation its owner cancelled is never replayed.
 */
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
  /** `replayed` (or `would replay` in a dry run) with the new id, or `skipped` with the reason. */
  action: 'replayed' | 'would replay' | 'skipped';
  newId: string | null;
  reason: string | null;
}

export async function replayFailed(services: Services, options: ReplayOptions): Promise<ReplayOutcome[]> {
  const { db, storage } = services;
  if (!options.ids.length && !options.errorCode && !options.since) throw new Error('name generations: --id, --error-code or --since');
  const query = db('generations').where({ status: 'failed' }).orderBy('finished_at').limit(options.limit);
  if (options.ids.length) query.whereIn('id', options.ids);
  if (options.errorCode) query.andWhere({ error_code: options.errorCode });
  if (options.since) query.andWhere('finished_at', '>=', options.since);
  if (options.until) query.andWhere('finished_at', '<', options.until);
  const failed: GenerationRow[] = await query.select('*');

  const outcomes: ReplayOutcome[] = [];
  for (const generation of failed) {
    const skip = (reason: string) => outcomes.push({ failedId: generation.id, userId: generation.user_id, action: 'skipped', newId: null, reason });
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
    let why = '';
    const newId = await db.transaction(async (trx) => {
      const started = await reserveAndQueue(trx, services, generation.user_id, plan);
      if (started === 'insufficient' || started === 'queue_full') {
        why = started === 'insufficient' ? `the user cannot pay ${plan.cost}` : 'the queue is full';
        throw refusal;
      }
      return started;
    }).catch((error: unknown) => {
      if (error === refusal) return null;
      throw error;
    });
    if (newId) outcomes.push({ failedId: generation.id, userId: generation.user_id, action: 'replayed', newId, reason: `cost ${plan.cost}` });
    else skip(why);
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
  if (effect.cost <= 0) return 'the effect has no price';
  return { kind: 'effect', effectId: effect.id, studioCategoryId: null, cost: effect.cost, outputType: effect.output_type, model: effect.model, ...same };
}

function describe(outcome: ReplayOutcome): string {
  const target = outcome.newId ? ` -> ${outcome.newId}` : '';
  return `${outcome.action.padEnd(12)} ${outcome.failedId} (user ${outcome.userId})${target}${outcome.reason ? `: ${outcome.reason}` : ''}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      id: { type: 'string', multiple: true, default: [] },
      'error-code': { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      limit: { type: 'string', default: '1000' },
      apply: { type: 'boolean', default: false },
    },
  });
  const time = (text: string | undefined) => {
    if (text === undefined) return null;
    const parsed = new Date(text);
    if (Number.isNaN(parsed.getTime())) throw new Error(`not a time: ${text}`);
    return parsed;
  };
  const options: ReplayOptions = {
    ids: values.id ?? [],
    errorCode: values['error-code'] ?? null,
    since: time(values.since),
    until: time(values.until),
    limit: Number(values.limit),
    apply: values.apply ?? false,
  };
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  try {
    const outcomes = await replayFailed(infrastructure.services, options);
    for (const outcome of outcomes) console.log(describe(outcome));
    const count = (action: ReplayOutcome['action']) => outcomes.filter((outcome) => outcome.action === action).length;
    console.log(options.apply
      ? `${count('replayed')} replayed, ${count('skipped')} skipped`
      : `dry run: ${count('would replay')} would be replayed, ${count('skipped')} skipped; add --apply to do it`);
  } finally {
    await infrastructure.stop();
    await flushLogs(log);
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
