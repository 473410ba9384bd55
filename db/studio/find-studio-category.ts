import type { Knex } from 'knex';
import { byIdOrSlug } from '../catalog/identifiers';
import type { ModelRoutes } from '../catalog/model';

/** What starting a studio generation needs to know about its category. */
export interface LaunchableStudioCategory {
  id: string;
  cost: number;
  output_type: 'image' | 'text';
  min_photos: number;
  max_photos: number;
  /** The simulator's model the task runs on when the category names no routes. */
  model: string;
  /** Its route on each provider kind (`pool/model-routes.ts`); null: the simulator's, on `model`. */
  runs: ModelRoutes | null;
}

/** An enabled studio category by id or slug, or null (a disabled one is gone for launching). */
export async function findStudioCategory(db: Knex, idOrSlug: string): Promise<LaunchableStudioCategory | null> {
  const row = await db('studio_categories')
    .where(byIdOrSlug(idOrSlug))
    .andWhere({ enabled: true })
    .first('id', 'cost', 'output_type', 'min_photos', 'max_photos', 'model', 'runs');
  return row ?? null;
}
