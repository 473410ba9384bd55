import type { Knex } from 'knex';
import type { Character, ModelRoutes } from './model';
import { byIdOrSlug } from './identifiers';

/** What launching a generation needs to know about an effect. */
export interface LaunchableEffect {
  id: string;
  slug: string;
  cost: number;
  characters: Character[];
  output_type: 'image' | 'video';
  /** The simulator's model the effect runs on when it names no routes. */
  model: string;
  /** Its route on each provider kind (`pool/model-routes.ts`); null: the simulator's, on `model`. */
  runs: ModelRoutes | null;
  /** How many photos the model accepts in one generation; null when only `characters` limit them. */
  model_max_photos: number | null;
  /** Hidden by a moderator: the caller decides whether that still launches. */
  hidden: boolean;
  /** A private user effect's: only this user may launch it. */
  private_to: string | null;
  /** A user effect's prompt, sent to the provider with the photos; null for the operator's effects. */
  prompt: string | null;
}

/**
 * The effect a generation is launched with, by id or slug, or null when there is none. Catalog
 * rule 1: an effect with no enabled category (or none at all) still opens and launches by direct id.
 */
export async function findLaunchableEffect(db: Knex, idOrSlug: string): Promise<LaunchableEffect | null> {
  const key = byIdOrSlug(idOrSlug);
  const row = await db('effects as e')
    .leftJoin('user_effects as ue', 'ue.effect_id', 'e.id')
    .where('id' in key ? { 'e.id': key.id } : { 'e.slug': key.slug })
    .first('e.id', 'e.slug', 'e.cost', 'e.characters', 'e.output_type', 'e.model', 'e.runs', 'e.model_max_photos', 'e.hidden', 'e.private_to', 'ue.prompt');
  return row ?? null;
}

/** Whether `userId` may launch it: not hidden, and a private user effect only by its author. */
export function launchableBy(effect: LaunchableEffect | null, userId: string): effect is LaunchableEffect {
  return effect !== null && !effect.hidden && (effect.private_to === null || effect.private_to === userId);
}
