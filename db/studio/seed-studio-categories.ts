import type { Knex } from 'knex';

/**
 * The demo studio categories (README, "Studio"), in their order, with the simulator's models. At
 * start they go into an empty table only (an operator's changes survive restarts, as with the
 * payment showcase); `npm run seed` adds the ones missing by slug and changes none.
 */
const demoStudioCategories = [
  {
    slug: 'text-to-image', position: 0, output_type: 'image', cost: 8, min_photos: 0, max_photos: 0, model: 'text_to_image',
    name_ru: 'Картинка по описанию', name_en: 'Text to image',
    description_ru: 'Опишите словами, что нарисовать, и получите картинку.', description_en: 'Describe what to draw and get a picture.',
  },
  {
    slug: 'photo-edit', position: 1, output_type: 'image', cost: 12, min_photos: 1, max_photos: 4, model: 'photo_edit',
    name_ru: 'Правка фото', name_en: 'Photo edit',
    description_ru: 'От одного до четырёх фото и описание того, что в них изменить.', description_en: 'One to four photos and what to change in them.',
  },
  {
    slug: 'ask-stylist', position: 2, output_type: 'text', cost: 2, min_photos: 0, max_photos: 1, model: 'ask',
    name_ru: 'Спросить стилиста', name_en: 'Ask a stylist',
    description_ru: 'Вопрос о стиле, можно с фото; ответ текстом.', description_en: 'A question about style, with a photo if you like; the answer is text.',
  },
];

const seedLock = 'seed:studio-categories';

/** Seeds the demo studio categories; `onlyIntoEmpty` at start. True when it added any. */
export async function seedStudioCategories(db: Knex, options: { onlyIntoEmpty: boolean }): Promise<boolean> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [seedLock]);
    if (options.onlyIntoEmpty && (await trx('studio_categories').first('id'))) return false;
    const added = await trx('studio_categories').insert(demoStudioCategories).onConflict('slug').ignore().returning('id');
    return added.length > 0;
  });
}
