import type { Knex } from 'knex';
import { byIdOrSlug } from '../catalog/identifiers';
import type { Locale } from '../catalog/locale';
import { schema } from '../http/validation';

/** StudioCategory (README, "Studio"). */
export interface StudioCategory {
  id: string;
  slug: string;
  name: string;
  description: string;
  output_type: 'image' | 'text';
  cost: number;
  min_photos: number;
  max_photos: number;
}

export const studioCategorySchema = schema.response({
  id: schema.uuid(),
  slug: schema.string(),
  name: schema.string(),
  description: schema.string(),
  output_type: schema.string({ enum: ['image', 'text'] }),
  cost: schema.integer({ minimum: 1 }),
  min_photos: schema.integer({ minimum: 0 }),
  max_photos: schema.integer({ minimum: 0 }),
}, { title: 'StudioCategory' });

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

/** Enabled studio categories in the operator's order, localized. */
export async function listStudioCategories(db: Knex, locale: Locale): Promise<StudioCategory[]> {
  return db('studio_categories')
    .where({ enabled: true })
    .orderBy([{ column: 'position' }, { column: 'slug' }])
    .select('id', 'slug', `name_${locale} as name`, `description_${locale} as description`, 'output_type', 'cost', 'min_photos', 'max_photos');
}

/** An enabled studio category by id or slug, or null (a disabled one is gone for launching). */
export async function findStudioCategory(db: Knex, idOrSlug: string): Promise<LaunchableStudioCategory | null> {
  const row = await db('studio_categories')
    .where(byIdOrSlug(idOrSlug))
    .andWhere({ enabled: true })
    .first('id', 'cost', 'output_type', 'min_photos', 'max_photos', 'model');
  return row ?? null;
}
