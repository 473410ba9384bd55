import type { Knex } from 'knex';
import type { Localized, ModelRoutes } from '../catalog/model';
import { nextPosition } from '../catalog/next-position';
import { routeColumns } from '../catalog/route-columns';

/** A studio category as the catalog import and the demo seed give it (docs/mobile.md, "Studio, voice input, queue position and cancel"). */
export interface StudioCategoryRow {
  slug: string;
  name: Localized;
  description?: Localized;
  output_type: 'image' | 'text';
  cost: number;
  min_photos: number;
  max_photos: number;
  /** The simulator's model: short for `runs.simulator` (`db/catalog/route-columns.ts`). */
  model?: string;
  runs?: ModelRoutes;
  position?: number;
  enabled?: boolean;
}

function columnsOf(row: StudioCategoryRow) {
  return {
    name_ru: row.name.ru,
    name_en: row.name.en,
    description_ru: row.description?.ru ?? '',
    description_en: row.description?.en ?? '',
    output_type: row.output_type,
    cost: row.cost,
    min_photos: row.min_photos,
    max_photos: row.max_photos,
    ...routeColumns(row),
    ...(row.enabled !== undefined ? { enabled: row.enabled } : {}),
  };
}

/**
 * Writes studio categories by slug: `missingOnly` adds the ones not there and changes none (the
 * demo seed), otherwise each is updated or made (the import). A new one without a position goes
 * after the others and those given one, in the given order. Answers how many were added.
 */
export async function writeStudioCategories(trx: Knex.Transaction, rows: StudioCategoryRow[], options: { missingOnly: boolean }): Promise<number> {
  let next = Math.max(await nextPosition(trx, 'studio_categories'), ...rows.map((row) => (row.position ?? -1) + 1));
  let added = 0;
  for (const row of rows) {
    const columns = columnsOf(row);
    if (!options.missingOnly && await trx('studio_categories').where({ slug: row.slug }).update({ ...columns, ...(row.position !== undefined ? { position: row.position } : {}) })) continue;
    const inserted = await trx('studio_categories').insert({ slug: row.slug, ...columns, position: row.position ?? next }).onConflict('slug').ignore().returning('id');
    if (inserted.length) {
      added += 1;
      if (row.position === undefined) next += 1;
    }
  }
  return added;
}
