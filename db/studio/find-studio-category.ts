import type { Knex } from 'knex';
import { byIdOrSlug } from '../catalog/identifiers';

/** What starting a studio generation needs to know about its category. */
export interface LaunchableStudioCategory {
  id: string;
  cost: number;
  output_type: 'image' | 'text';
  min_photos: number;
  max_photos: number;
  /** The provider model the task runs on. */
  model: string;
}

/** An enabled studio category by id or slug, or null (a disabled one is gone for launching). */
export async function findStudioCategory(db: Knex, idOrSlug: string): Promise<LaunchableStudioCategory | null> {
  const row = await db('studio_categories')
    .where(byIdOrSlug(idOrSlug))
    .andWhere({ enabled: true })
    .first('id', 'cost', 'output_type', 'min_photos', 'max_photos', 'model');
  return row ?? null;
}
