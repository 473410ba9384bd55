import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { schema } from '../../common/validation';
import { byIdOrSlug } from '../../db/catalog/identifiers';
import { availableEffect } from './catalog-order';
import { localizedListRoute, type Locale } from './locale';

export interface Category {
  id: string;
  slug: string;
  name: string;
  icon: string;
  position: number;
  effect_count: number;
  gen_count: number;
}

const categorySchema = schema.response({
  id: schema.uuid(),
  slug: schema.string(),
  name: schema.string(),
  icon: schema.string(),
  position: schema.integer(),
  effect_count: schema.integer(),
  gen_count: schema.integer(),
}, { title: 'Category' });

/**
 * Enabled categories in the operator's order, `position` counting from 0 among them. An effect
 * counts in every category it is in (so the sum can exceed the number of effects); effects that are
 * not available (hidden, or run by no provider kind with an account here) do not count. `gen_count`, the popularity, is the successful generations of those effects.
 */
async function listCategories(db: Knex, locale: Locale, offered: readonly ProviderKind[]): Promise<Category[]> {
  const { rows } = await db.raw<{ rows: Category[] }>(
    `select c.id, c.slug, c.name_${locale} as name, c.icon,
       (row_number() over (order by c.position, c.slug) - 1)::integer as position,
       count(e.id)::integer as effect_count,
       coalesce(sum(e.success_count), 0)::integer as gen_count
     from categories c
     left join effect_categories ec on ec.category_id = c.id
     left join effects e on e.id = ec.effect_id and ${availableEffect('e', offered)}
     where c.enabled
     group by c.id
     order by c.position, c.slug`,
  );
  return rows;
}

/** The id of an enabled category given by id or slug, or null. */
export async function findEnabledCategoryId(db: Knex, idOrSlug: string): Promise<string | null> {
  const row = await db('categories').where(byIdOrSlug(idOrSlug)).andWhere({ enabled: true }).first('id');
  return row?.id ?? null;
}

export const categoryRoutes = [
  localizedListRoute('/v1/categories', 'Enabled categories in the operator order, localized.', 'Categories', categorySchema, listCategories),
];
