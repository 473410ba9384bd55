import type { Knex } from 'knex';
import { writeStudioCategories, type StudioCategoryRow } from './write-studio-categories';

/**
 * The demo studio categories (docs/mobile.md, "Studio, voice input, queue position and cancel"), in their order, on the simulator's models; written
 * as the catalog import takes them (`studio_categories`, `runs` per provider kind beside or instead
 * of `model`). At start they go into an empty table only (an operator's changes survive restarts,
 * as with the payment showcase); `npm run seed` adds the ones missing by slug and changes none.
 */
export const demoStudioCategories: StudioCategoryRow[] = [
  {
    slug: 'text-to-image', position: 0, output_type: 'image', cost: 8, min_photos: 0, max_photos: 0, model: 'text_to_image',
    name: { ru: 'Картинка по описанию', en: 'Text to image' },
    description: { ru: 'Опишите словами, что нарисовать, и получите картинку.', en: 'Describe what to draw and get a picture.' },
  },
  {
    slug: 'photo-edit', position: 1, output_type: 'image', cost: 12, min_photos: 1, max_photos: 4, model: 'photo_edit',
    name: { ru: 'Правка фото', en: 'Photo edit' },
    description: { ru: 'От одного до четырёх фото и описание того, что в них изменить.', en: 'One to four photos and what to change in them.' },
  },
  {
    slug: 'ask-stylist', position: 2, output_type: 'text', cost: 2, min_photos: 0, max_photos: 1, model: 'ask',
    name: { ru: 'Спросить стилиста', en: 'Ask a stylist' },
    description: { ru: 'Вопрос о стиле, можно с фото; ответ текстом.', en: 'A question about style, with a photo if you like; the answer is text.' },
  },
];

const seedLock = 'seed:studio-categories';

/** Seeds the demo studio categories; `onlyIntoEmpty` at start. True when it added any. */
export async function seedStudioCategories(db: Knex, options: { onlyIntoEmpty: boolean }): Promise<boolean> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [seedLock]);
    if (options.onlyIntoEmpty && (await trx('studio_categories').first('id'))) return false;
    return (await writeStudioCategories(trx, demoStudioCategories, { missingOnly: true })) > 0;
  });
}
