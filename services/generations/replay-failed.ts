import { debitCoverage, Shortfall } from '../../db/credits/ledger';
import { recordReplay } from '../../db/generations/record-replay';
import type { GenerationRow } from '../../db/generations/model';
import type { Services } from '..';
import { findLaunchableEffect, launchableBy } from '../../db/catalog/launchable';
import { isUuid } from '../../common/validation';
import { findStudioCategory } from '../../db/studio/find-studio-category';
import { generationRoute } from '../../pool/task-routes';
import { reserveAndQueue, type GenerationPlan } from './reserve-and-queue';

/**
 * Re-runs failed generations as NEW generations: `npm run replay-failed` (scripts/replay-failed.ts)
 * and the operator console's replay action (api/ops/) both call `replayFailed`. Each replay reserves
 * the effect's (or studio category's) current cost with the same photos (and prompt), in one
 * transaction that also records the replay on the failed generation, so a failure is replayed, and
 * charged, at most once whoever asks and however often.
 */

/** A selection that names nothing, or ids that are no ids: nothing is read or changed. */
export class ReplaySelectionError extends Error {}

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
  if (!options.ids.length && !options.errorCode && !options.since) throw new ReplaySelectionError('name the generations: --id, --error-code or --since');
  const notIds = options.ids.filter((id) => !isUuid(id));
  if (notIds.length) throw new ReplaySelectionError(`not a generation id: ${notIds.join(', ')}`);
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
      const { balance, enough } = await debitCoverage(db, generation.user_id, plan.cost);
      if (!enough) skip(`the user cannot pay ${plan.cost} (balance ${balance})`);
      else outcomes.push({ failedId: generation.id, userId: generation.user_id, action: 'would replay', newId: null, reason: `cost ${plan.cost}` });
      continue;
    }
    const refusal = Symbol('refused');
    const refused: { why?: string; replayedAs?: string } = {};
    const newId = await db.transaction(async (trx) => {
      const started = await reserveAndQueue(trx, services, generation.user_id, plan);
      if (started instanceof Shortfall || started === 'queue_full') {
        refused.why = started instanceof Shortfall ? `the user cannot pay ${started.amount} (balance ${started.balance})` : 'the queue is full';
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

/** A new attempt at today's price and route of the effect or studio category, or why there is none. */
async function replayPlan({ db, config }: Services, generation: GenerationRow): Promise<GenerationPlan | string> {
  const same = { prompt: generation.prompt, inputs: generation.inputs };
  if (generation.kind === 'studio') {
    const category = await findStudioCategory(db, generation.studio_category_id!);
    if (!category) return 'the studio category is gone or disabled';
    const route = generationRoute(config, category);
    if (!route) return 'no provider with an account here runs the studio category';
    return { kind: 'studio', effectId: null, studioCategoryId: category.id, cost: category.cost, outputType: category.output_type, model: category.model, providerKind: route.kind, route: route.route, ...same };
  }
  const effect = await findLaunchableEffect(db, generation.effect_id!);
  if (!launchableBy(effect, generation.user_id)) return 'the effect is gone, hidden or its author\'s only';
  const route = generationRoute(config, effect);
  if (!route) return 'no provider with an account here runs the effect';
  if (effect.cost <= 0) return 'the effect has no price';
  return { kind: 'effect', effectId: effect.id, studioCategoryId: null, cost: effect.cost, outputType: effect.output_type, model: effect.model, providerKind: route.kind, route: route.route, ...same };
}
