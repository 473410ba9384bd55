import type { Knex } from 'knex';
import { createKnex } from '../db/knex';
import { startScratchStack } from '../process/scratch-stack';
import { reportFigure } from './bench-figures';
import { startBareKoa, startService } from './bench-processes';
import { compareLoads, formatLoad, runLoad, type LoadOptions, type LoadRequest, type LoadResult } from './load';

/**
 * The catalog under load: 10,000 generated effects, then the flat list, a category page and
 * search, each measured beside the bare Koa route in alternating rounds of the same run (two of
 * each, the best of each kept: one busy moment of this shared machine moved a single round's ratio
 * by a third). A running service has each effect's view in memory; the first round of distinct
 * searches also reads the views no page showed before.
 * `benchCatalog` is called by `npm run bench`; `node dist/scripts/bench-catalog.js` runs it alone.
 */

// Three word lists whose combinations name 10,000 effects differently, in both languages.
const adjectives = [
  ['Зимний', 'Winter'], ['Летний', 'Summer'], ['Золотой', 'Golden'], ['Королевский', 'Royal'], ['Неоновый', 'Neon'],
  ['Винтажный', 'Vintage'], ['Сказочный', 'Fairy'], ['Космический', 'Cosmic'], ['Акварельный', 'Watercolor'], ['Кибер', 'Cyber'],
  ['Ретро', 'Retro'], ['Мраморный', 'Marble'], ['Пиксельный', 'Pixel'], ['Лесной', 'Forest'], ['Морской', 'Sea'],
  ['Огненный', 'Fiery'], ['Ледяной', 'Icy'], ['Джазовый', 'Jazz'], ['Уличный', 'Street'], ['Праздничный', 'Festive'],
];
const nouns = [
  ['портрет', 'portrait'], ['пейзаж', 'landscape'], ['образ', 'look'], ['стикер', 'sticker'], ['танец', 'dance'],
  ['герой', 'hero'], ['рыцарь', 'knight'], ['принцесса', 'princess'], ['самурай', 'samurai'], ['пилот', 'pilot'],
  ['художник', 'painter'], ['детектив', 'detective'], ['волшебник', 'wizard'], ['астронавт', 'astronaut'], ['пират', 'pirate'],
  ['музыкант', 'musician'], ['спортсмен', 'athlete'], ['модель', 'model'], ['шеф', 'chef'], ['ковбой', 'cowboy'],
];
const styles = [
  ['аниме', 'anime'], ['комикс', 'comic'], ['масло', 'oil'], ['графика', 'graphics'], ['неон', 'neon'],
  ['нуар', 'noir'], ['поп-арт', 'pop-art'], ['барокко', 'baroque'], ['импрессионизм', 'impressionism'], ['киберпанк', 'cyberpunk'],
  ['стимпанк', 'steampunk'], ['минимализм', 'minimalism'], ['сюрреализм', 'surrealism'], ['фэнтези', 'fantasy'], ['укиё-э', 'ukiyo-e'],
  ['витраж', 'stained-glass'], ['мозаика', 'mosaic'], ['гравюра', 'engraving'], ['пастель', 'pastel'], ['граффити', 'graffiti'],
  ['кинематограф', 'cinema'], ['сепия', 'sepia'], ['голограмма', 'hologram'], ['оригами', 'origami'], ['пластилин', 'clay'],
];
const categories = [
  ['Портреты', 'Portraits'], ['Весёлое', 'Fun'], ['Видео', 'Video'], ['Праздники', 'Holidays'], ['Аниме', 'Anime'], ['Ретро', 'Retro'],
  ['Фэнтези', 'Fantasy'], ['Спорт', 'Sports'], ['Мода', 'Fashion'], ['Природа', 'Nature'], ['Семья', 'Family'], ['Архив', 'Archive'],
];
const tags = ['portrait', 'winter', 'summer', 'gold', 'royal', 'neon', 'vintage', 'fairy', 'space', 'art', 'retro', 'anime', 'comic',
  'noir', 'fantasy', 'sport', 'fashion', 'nature', 'family', 'holiday', 'couple', 'kids', 'pets', 'video', 'sticker', 'cinema', 'music',
  'street', 'sea', 'forest'];

const column = (words: string[][], language: 0 | 1) => words.map((pair) => pair[language]);

/**
 * Adds `count` generated effects (`bench-effect-N`, replacing those of an earlier run) in 12 bench
 * categories (the last one disabled, every third effect in a second category, a few pinned and new
 * ones) with two of 30 tags each. Whatever else the database holds stays.
 */
export async function generateBenchCatalog(db: Knex, count: number): Promise<void> {
  await db('effects').where('slug', 'like', 'bench-effect-%').delete();
  await db.raw(
    `insert into categories (slug, name_ru, name_en, position, enabled)
     select 'bench-category-' || i, (:ru::text[])[i], (:en::text[])[i], 100 + i, i < 12 from generate_series(1, 12) i
     on conflict (slug) do nothing`,
    { ru: column(categories, 0), en: column(categories, 1) },
  );
  await db.raw(
    `insert into tags (slug, name_ru, name_en) select slug, slug, slug from unnest(:tags::text[]) slug on conflict (slug) do nothing`,
    { tags },
  );
  await db.raw(
    `insert into effects (slug, name_ru, name_en, description_ru, description_en, cost, characters, model, position, success_count, poster_key)
     select 'bench-effect-' || i,
       (:adjRu::text[])[1 + i % 20] || ' ' || (:nounRu::text[])[1 + (i / 20) % 20] || ': ' || (:styleRu::text[])[1 + (i / 400) % 25],
       (:adjEn::text[])[1 + i % 20] || ' ' || (:nounEn::text[])[1 + (i / 20) % 20] || ': ' || (:styleEn::text[])[1 + (i / 400) % 25],
       'Фото превращается в ' || (:styleRu::text[])[1 + (i / 400) % 25] || ' с мягким светом и ярким фоном',
       'Your photo becomes ' || (:styleEn::text[])[1 + (i / 400) % 25] || ' with soft light and a bright background',
       10 + i % 40, '[{"min_photos": 1, "max_photos": 1}]', 'image', 1000 + i, (i * 7919) % 1000, 'effects/bench/' || i || '/poster.jpg'
     from generate_series(0, :count - 1) i`,
    {
      count,
      adjRu: column(adjectives, 0), adjEn: column(adjectives, 1),
      nounRu: column(nouns, 0), nounEn: column(nouns, 1),
      styleRu: column(styles, 0), styleEn: column(styles, 1),
    },
  );
  // Generated numbers: the effect's index `n` (position - 1000) and its categories' numbers.
  const bench = `(select e.id, e.position - 1000 as n from effects e where e.slug like 'bench-effect-%') b`;
  await db.raw(
    `insert into effect_categories (effect_id, category_id, position, pinned_top, new_since)
     select b.id, c.id, 0,
       case when b.n % 997 = 0 then b.n end,
       case when b.n % 211 = 0 then now() - interval '1 day' end
     from ${bench} join categories c on c.slug = 'bench-category-' || (1 + b.n % 12)
     union all
     select b.id, c.id, 1, null, null
     from ${bench} join categories c on c.slug = 'bench-category-' || (1 + (b.n / 3 + 5) % 12)
     where b.n % 3 = 0 and b.n % 12 <> (b.n / 3 + 5) % 12`,
  );
  await db.raw(
    `insert into effect_tags (effect_id, tag_id, position)
     select b.id, t.id, 0 from ${bench} join tags t on t.slug = (:tags::text[])[1 + b.n % 30]
     union all
     select b.id, t.id, 1 from ${bench} join tags t on t.slug = (:tags::text[])[1 + (b.n / 30 + 7) % 30]
     where (b.n / 30 + 7) % 30 <> b.n % 30`,
    { tags },
  );
  // Linking the effects rewrote every row (the `listed` trigger); compact the table as a catalog
  // built over time would be, then as autovacuum would soon: statistics and a visibility map.
  await db.raw('vacuum full effects');
  await db.raw('vacuum analyze effects, effect_search, effect_categories, effect_tags, categories, tags, search_words');
}

export interface CatalogBenchTarget {
  databaseUrl: string;
  /** The service under test (`node dist/main.js web`) on that database. */
  webUrl: string;
  /** The bare Koa baseline. */
  bareUrl: string;
}

/** One figure of the table: the measured value beside its goal. */
export interface CatalogFigure {
  name: string;
  subject: LoadResult;
  /** The bare Koa route in the same rounds (null for a latency figure, which stands alone). */
  baseline: LoadResult | null;
  ratio: number | null;
  goal: string;
  met: boolean;
}

/**
 * The i-th of 10,000 different searches (three words of the generated names, every third with a
 * letter dropped: a typo), so none is answered from the cache.
 */
export function distinctSearch(index: number): string {
  const language = index % 2;
  const noun = nouns[Math.floor(index / 20) % 20][language];
  const typed = index % 3 === 0 && noun.length > 5 ? noun.slice(0, 2) + noun.slice(3) : noun;
  return `${adjectives[index % 20][language]} ${typed} ${styles[Math.floor(index / 400) % 25][language]}`;
}

export async function benchCatalog(
  target: CatalogBenchTarget,
  options: LoadOptions & { effects?: number } = {},
): Promise<CatalogFigure[]> {
  const { effects = 10_000, concurrency = 50, durationMs = 5000, warmupMs = 1000 } = options;
  const db = createKnex(target.databaseUrl, 2);
  const started = Date.now();
  try {
    await generateBenchCatalog(db, effects);
  } finally {
    await db.destroy();
  }
  console.log(`\n## Catalog: ${effects} effects generated in ${Date.now() - started} ms; ${concurrency} concurrent loops, ${durationMs} ms each`);

  // Distinct searches never repeat within the run, across rounds and levels.
  let searchCounter = 0;
  const nextSearch = () => `/v1/effects?limit=20&search=${encodeURIComponent(distinctSearch(searchCounter++))}`;
  const list = () => '/v1/effects?limit=20';
  const category = (index: number) => `/v1/effects?category=bench-category-${1 + (index % 11)}&limit=20`;
  const etag = (await fetch(target.webUrl + list())).headers.get('etag');
  if (!etag) throw new Error('the flat list answered without an ETag');

  const load = { concurrency, durationMs, warmupMs };
  const figures: CatalogFigure[] = [];
  const against = async (name: string, request: (index: number) => LoadRequest, goal: number, goalText: string) => {
    const { baseline, subject, ratio } = await compareLoads(
      () => runLoad(target.bareUrl, () => ({ path: '/healthz' }), load),
      () => runLoad(target.webUrl, request, load),
    );
    figures.push({ name, subject, baseline, ratio, goal: goalText, met: ratio >= goal });
    console.log(formatLoad('bare Koa', baseline));
    console.log(`${formatLoad(name, subject)}   ${(ratio * 100).toFixed(1)}% of bare Koa (goal ${goalText})`);
  };
  await against('GET /v1/effects (flat list, curated order), 50 clients', () => ({ path: list() }), 0.25, '>= 25%');
  await against('GET /v1/effects?category= (category order), 50 clients', (index) => ({ path: category(index) }), 0.25, '>= 25%');
  await against('GET /v1/effects?search= (distinct queries), 50 clients', () => ({ path: nextSearch() }), 0.05, '>= 5%');
  await against('GET /v1/effects?search= (one repeated query), 50 clients', () => ({ path: `/v1/effects?limit=20&search=${encodeURIComponent('зимний портрет')}` }), 0.25, 'as the list');
  await against('GET /v1/effects, If-None-Match (304), 50 clients', () => ({ path: list(), headers: { 'if-none-match': etag } }), 0.5, '>= 50%');

  const few = { concurrency: 4, durationMs, warmupMs };
  const latency = async (name: string, request: (index: number) => LoadRequest, goalMs: number) => {
    const subject = await runLoad(target.webUrl, request, few);
    figures.push({ name, subject, baseline: null, ratio: null, goal: `p95 < ${goalMs} ms`, met: subject.p95Ms < goalMs });
    console.log(`${formatLoad(name, subject)}   (goal p95 < ${goalMs} ms)`);
  };
  console.log('\n4 concurrent clients:');
  await latency('flat list, 4 clients', () => ({ path: list() }), 10);
  await latency('category page, 4 clients', (index) => ({ path: category(index) }), 10);
  await latency('search, distinct queries, 4 clients', () => ({ path: nextSearch() }), 25);
  return figures;
}

async function main(): Promise<void> {
  const stack = await startScratchStack();
  const bare = await startBareKoa();
  const web = await startService(['web'], stack.serviceEnv({ LOG_LEVEL: 'warn' }));
  try {
    const figures = await benchCatalog({ databaseUrl: stack.databaseUrl, webUrl: web.url, bareUrl: bare.url });
    for (const figure of figures) {
      reportFigure({
        figure: `catalog of 10,000 effects: ${figure.name}`,
        value: figure.ratio === null
          ? `p95 ${figure.subject.p95Ms} ms (${figure.subject.rps} req/s)`
          : `${(figure.ratio * 100).toFixed(1)}% (${figure.subject.rps} req/s, p95 ${figure.subject.p95Ms} ms)`,
        baseline: figure.baseline ? `bare Koa ${figure.baseline.rps} req/s` : '',
        goal: figure.goal,
        met: figure.met,
      });
    }
  } finally {
    await web.stop();
    await bare.stop();
    await stack.stop();
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
