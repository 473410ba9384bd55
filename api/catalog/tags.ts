import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { schema } from '../../common/validation';
import { availableEffect } from './catalog-order';
import { localizedListRoute, type Locale } from './locale';

export interface Tag {
  slug: string;
  name: string;
  effect_count: number;
}

/**
 * Tags on at least one listed effect, counted over the whole catalog (not per category), most
 * frequent first; equal counts by slug, so the order is stable.
 */
async function listTags(db: Knex, locale: Locale, offered: readonly ProviderKind[]): Promise<Tag[]> {
  const { rows } = await db.raw<{ rows: Tag[] }>(
    `select t.slug, t.name_${locale} as name, count(*)::integer as effect_count
     from tags t
     join effect_tags et on et.tag_id = t.id
     join effects e on e.id = et.effect_id
     where ${availableEffect('e', offered)}
     group by t.id
     order by effect_count desc, t.slug`,
  );
  return rows;
}

export async function findTagId(db: Knex, slug: string): Promise<string | null> {
  const row = await db('tags').where({ slug }).first('id');
  return row?.id ?? null;
}

const tagSchema = schema.response({ slug: schema.string(), name: schema.string(), effect_count: schema.integer() }, { title: 'Tag' });

export const tagRoutes = [
  localizedListRoute('/v1/tags', 'Tags on listed effects, most frequent first, with counts over the whole catalog.', 'Tags', tagSchema, listTags),
];
