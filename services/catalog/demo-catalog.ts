import type { Knex } from 'knex';
import { catalogIsEmpty } from '../../db/catalog/catalog-is-empty';
import type { Logger } from '../../common/logger';
import { demoClip, demoPoster } from '../../media/demo-assets';
import type { Storage } from '../../media/storage';
import { importCatalog, type CatalogDocument, type EffectRow, type ImportSummary } from './import';

/**
 * The demo catalog (docs/mobile.md, "The demo catalog: what to try"): what a mobile developer tries first and what tests may
 * rely on. Slugs, people, costs, outputs, categories and simulator models are fixed there.
 */

export const demoAuthorId = '5f0c2b9e-6d1a-4c8e-9b3f-2a7d4e1c8b60';

const one = [{ min_photos: 1, max_photos: 1 }];

/** Demo effects name no media: each gets its drawn poster, and a generated clip when `withClip`. */
type DemoEffect = Omit<EffectRow, 'poster' | 'clip'> & { withClip?: boolean };

export const demoCatalog: CatalogDocument = {
  categories: [
    { slug: 'portraits', name: { ru: 'Портреты', en: 'Portraits' }, icon: '🖼️', enabled: true, position: 0 },
    { slug: 'fun', name: { ru: 'Весёлое', en: 'Fun' }, icon: '🎉', enabled: true, position: 1 },
    { slug: 'video', name: { ru: 'Видео', en: 'Video' }, icon: '🎬', enabled: true, position: 2 },
    { slug: 'archive', name: { ru: 'Архив', en: 'Archive' }, icon: '🗄️', enabled: false, position: 3 },
  ],
  tags: [
    { slug: 'portrait', name: { ru: 'портрет', en: 'portrait' } },
    { slug: 'winter', name: { ru: 'зима', en: 'winter' } },
    { slug: 'hero', name: { ru: 'герой', en: 'hero' } },
    { slug: 'couple', name: { ru: 'пара', en: 'couple' } },
    { slug: 'royal', name: { ru: 'королевский', en: 'royal' } },
    { slug: 'twins', name: { ru: 'близнецы', en: 'twins' } },
    { slug: 'studio', name: { ru: 'студия', en: 'studio' } },
    { slug: 'family', name: { ru: 'семья', en: 'family' } },
    { slug: 'dance', name: { ru: 'танец', en: 'dance' } },
    { slug: 'video', name: { ru: 'видео', en: 'video' } },
    { slug: 'sticker', name: { ru: 'стикер', en: 'sticker' } },
    { slug: 'gold', name: { ru: 'золото', en: 'gold' } },
    { slug: 'art', name: { ru: 'искусство', en: 'art' } },
    { slug: 'retro', name: { ru: 'ретро', en: 'retro' } },
    { slug: 'test', name: { ru: 'тест', en: 'test' } },
  ],
  authors: [{ id: demoAuthorId, name: 'Mira Sticker Lab', avatar: 'avatar' }],
  effects: ([
    {
      slug: 'winter-portrait',
      name: { ru: 'Зимний портрет', en: 'Winter portrait' },
      description: { ru: 'Портрет в заснеженном лесу в мягком зимнем свете.', en: 'A portrait in a snowy forest in soft winter light.' },
      cost: 10, characters: one, output_type: 'image', model: 'image',
      categories: ['portraits'], tags: ['portrait', 'winter'], focus: { x: 0.5, y: 0.35 },
    },
    {
      slug: 'multi-angle-hero',
      name: { ru: 'Герой с разных ракурсов', en: 'Multi-angle hero' },
      description: {
        ru: 'До четырёх фото одного лица с разных сторон: кинематографичный кадр героя.',
        en: 'Up to four photos of one face from different angles for a cinematic hero shot.',
      },
      cost: 15, characters: [{ min_photos: 1, max_photos: 4 }], output_type: 'image', model: 'image',
      categories: ['portraits'], tags: ['hero', 'portrait'],
    },
    {
      slug: 'royal-couple',
      name: { ru: 'Королевская пара', en: 'Royal couple' },
      description: { ru: 'Двое в королевских нарядах на парадном полотне.', en: 'Two people in royal attire on a ceremonial canvas.' },
      cost: 20, characters: [...one, ...one], output_type: 'image', model: 'image',
      categories: ['portraits', 'fun'], tags: ['couple', 'royal'],
    },
    {
      slug: 'twin-studio',
      name: { ru: 'Студия близнецов', en: 'Twin studio' },
      description: { ru: 'Два человека, по два фото каждого: студийный снимок в одинаковых образах.', en: 'Two people, two photos each: a studio shot in matching looks.' },
      cost: 20, characters: [{ min_photos: 2, max_photos: 2 }, { min_photos: 2, max_photos: 2 }], output_type: 'image', model: 'image',
      categories: ['fun'], tags: ['twins', 'studio'],
    },
    {
      slug: 'family-trio',
      name: { ru: 'Семейное трио', en: 'Family trio' },
      description: { ru: 'Семейный снимок на двоих или троих; третий человек по желанию.', en: 'A family shot for two or three; the third person is optional.' },
      cost: 30, characters: [{ min_photos: 1, max_photos: 3 }, { min_photos: 1, max_photos: 3 }, { min_photos: 0, max_photos: 2 }],
      output_type: 'image', model: 'image',
      categories: ['fun'], tags: ['family'],
    },
    {
      slug: 'dance-video',
      name: { ru: 'Танцевальное видео', en: 'Dance video' },
      description: { ru: 'Короткий ролик, где вы танцуете в ритме музыки.', en: 'A short clip of you dancing to the beat.' },
      cost: 40, characters: one, output_type: 'video', model: 'video',
      categories: ['video'], tags: ['dance', 'video'], withClip: true,
      focus: { x: 0.5, y: 0.4 }, video_focus: { x: 0.5, y: 0.45 },
    },
    {
      slug: 'community-sticker',
      name: { ru: 'Стикер от сообщества', en: 'Community sticker' },
      description: { ru: 'Стикер на прозрачном фоне от автора сообщества.', en: 'A sticker on a transparent background by a community author.' },
      cost: 5, characters: one, output_type: 'image', model: 'sticker',
      categories: ['fun'], tags: ['sticker'], author: demoAuthorId,
    },
    {
      slug: 'golden-masterpiece',
      name: { ru: 'Золотой шедевр', en: 'Golden masterpiece' },
      description: { ru: 'Портрет в манере старых мастеров с сусальным золотом.', en: 'An old-masters portrait with gold leaf.' },
      cost: 1000, characters: one, output_type: 'image', model: 'image',
      categories: ['portraits'], tags: ['gold', 'art', 'portrait'],
    },
    {
      slug: 'archive-classic',
      name: { ru: 'Архивная классика', en: 'Archive classic' },
      description: { ru: 'Снимок в духе старых фотоальбомов.', en: 'A shot in the spirit of old photo albums.' },
      cost: 10, characters: one, output_type: 'image', model: 'image',
      categories: ['archive'], tags: ['retro'],
    },
    {
      slug: 'direct-only',
      name: { ru: 'Только по ссылке', en: 'Direct link only' },
      description: { ru: 'Открывается только по прямой ссылке.', en: 'Opens by direct link only.' },
      cost: 10, characters: one, output_type: 'image', model: 'image',
      categories: [], tags: [],
    },
    {
      slug: 'qa-safety',
      name: { ru: 'QA: отказ фильтра безопасности', en: 'QA: safety refusal' },
      description: { ru: 'Всегда завершается ошибкой safety.', en: 'Always fails with safety.' },
      cost: 10, characters: one, output_type: 'image', model: 'safety',
      categories: ['archive'], tags: ['test'],
    },
    {
      slug: 'qa-provider-error',
      name: { ru: 'QA: ошибка провайдера', en: 'QA: provider error' },
      description: { ru: 'Всегда завершается ошибкой провайдера.', en: 'Always fails with a provider error.' },
      cost: 10, characters: one, output_type: 'image', model: 'error',
      categories: ['archive'], tags: ['test'],
    },
  ] satisfies DemoEffect[]).map(({ withClip, ...effect }) => ({
    ...effect,
    poster: `poster:${effect.slug}`,
    ...(withClip ? { clip: `clip:${effect.slug}` } : {}),
  })),
};

/**
 * The demo media behind the references of `demoCatalog`: drawn posters, one short generated clip,
 * an avatar. Made once per seed (the importer reads each twice: to check, then to build).
 */
function demoMedia(): (reference: string) => Promise<Buffer> {
  const made = new Map<string, Promise<Buffer>>();
  const make = (reference: string): Promise<Buffer> => {
    const [kind, slug] = reference.split(':');
    // Small enough to seed in a few seconds, large enough for real thumb (480) and card copies.
    if (kind === 'poster') return demoPoster(slug, slug === 'dance-video' ? { width: 540, height: 960 } : { width: 600, height: 800 });
    if (kind === 'clip') return demoClip({ seconds: 2, width: 540, height: 960, fps: 24 });
    if (reference === 'avatar') return demoPoster('author', { width: 256, height: 256 });
    return Promise.reject(new Error(`unknown demo asset ${reference}`));
  };
  return (reference) => {
    if (!made.has(reference)) made.set(reference, make(reference));
    return made.get(reference)!;
  };
}

/**
 * Seeding runs under one advisory lock, held by its transaction: several processes may start at
 * once against one database (or `npm run seed` beside `npm start`); one seeds while the others wait.
 */
function underSeedLock<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtext('catalog:demo-seed'))");
    return work(trx);
  });
}

/** `npm run seed`: imports the demo catalog; a second run updates the same rows and adds none. */
export function seedDemoCatalog(db: Knex, storage: Storage): Promise<ImportSummary> {
  return underSeedLock(db, (trx) => importCatalog(trx, storage, demoCatalog, { readMedia: demoMedia() }));
}

/** On start: the demo catalog goes into an empty catalog only; true when it did. */
export function seedDemoCatalogIfEmpty(db: Knex, storage: Storage, log: Logger): Promise<boolean> {
  return underSeedLock(db, async (trx) => {
    if (!(await catalogIsEmpty(trx))) return false;
    const started = Date.now();
    const summary = await importCatalog(trx, storage, demoCatalog, { readMedia: demoMedia() });
    log.info({ ...summary, durationMs: Date.now() - started }, 'demo catalog seeded');
    return true;
  });
}
