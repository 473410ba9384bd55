import type { Knex } from 'knex';
import type { Character } from './effect-view';
import { byIdOrSlug } from './identifiers';

/** What launching a generation needs to know about an effect. */
export interface LaunchableEffect {
  id: string;
  slug: string;
  cost: number;
  characters: Character[];
  output_type: 'image' | 'video';
  /** The provider model the effect runs on. */
  model: string;
  /** How many photos the model accepts in one generation; null when only `characters` limit them. */
  model_max_photos: number | null;
  /** Hidden by a moderator: the caller decides whether that still launches. */
  hidden: boolean;
}

/**
 * The effect a generation is launched with, by id or slug, or null when there is none. Catalog
 * rule 1: an effect with no enabled category (or none at all) still opens and launches by direct id.
 */
export async function findLaunchableEffect(db: Knex, idOrSlug: string): Promise<LaunchableEffect | null> {
  const row = await db('effects')
    .where(byIdOrSlug(idOrSlug))
    .first('id', 'slug', 'cost', 'characters', 'output_type', 'model', 'model_max_photos', 'hidden');
  return row ?? null;
}
