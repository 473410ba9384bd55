import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { hasRouteFor } from '../../db/catalog/offered';
import type { Locale } from '../catalog/locale';
import { schema } from '../../common/validation';

/** StudioCategory (docs/mobile.md, "Studio, voice input, queue position and cancel"). */
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

/** Enabled studio categories in the operator's order, localized; those no provider kind with an account here runs (`offered`) are left out, as effects are. */
export async function listStudioCategories(db: Knex, locale: Locale, offered: readonly ProviderKind[]): Promise<StudioCategory[]> {
  return db('studio_categories')
    .where({ enabled: true })
    .andWhereRaw(hasRouteFor('studio_categories', offered))
    .orderBy([{ column: 'position' }, { column: 'slug' }])
    .select('id', 'slug', `name_${locale} as name`, `description_${locale} as description`, 'output_type', 'cost', 'min_photos', 'max_photos');
}
