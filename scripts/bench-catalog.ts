import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createKnex } from '../db/knex';
import type { ScratchStack } from '../process/scratch-stack';
import { reportFigure } from './bench-figures';
import { startBareKoa, startService, type ServiceProcess } from './bench-processes';
import { runBench } from './bench-runner';
import { compareLoads, formatLoad, runLoad, withServerCpu, type LoadOptions, type LoadRequest, type LoadResult } from './load';

/**
 * The catalog under load: 10,000 generated effects, then the flat list, a category page and
 * search, each measured beside the bare Koa route in alternating rounds of the same run (two of
 * each, the best of each kept: one busy moment of this shared machine moved a single round's ratio
 * by a third), each with the server's CPU time per request: the load generator shares the two
 * cores with the server, so a bigger answer costs the client too. Every request accepts gzip, as a
 * phone's does. The bare route sending the flat list's bytes as sent, measured first, says how far
 * that lets a page go. Each distinct search finds another
 * effect, so its page also reads a view no page showed before.
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
  web: ServiceProcess;
  /** The bare Koa baseline. */
  bare: ServiceProcess;
}

/** A load's result with the server's CPU time per request (`withServerCpu`). */
type Measured = LoadResult & { serverCpuUsPerRequest: number };

/** One figure of the bench's closing table: the measured value beside its goal. */
export interface CatalogFigure {
  name: string;
  subject: Measured;
  /** The bare Koa route in the same rounds (null for a latency figure, which stands alone). */
  baseline: Measured | null;
  ratio: number | null;
  goal: string;
  met: boolean;
}

/**
 * The i-th of 300,000 different searches (three words of the generated names, every third with a
 * letter dropped: a typo, and one of the 30 tags), so none is answered from the cache: a run sends
 * far fewer.
 */
export function distinctSearch(index: number): string {
  const language = index % 2;
  const noun = nouns[Math.floor(index / 20) % 20][language];
  const typed = index % 3 === 0 && noun.length > 5 ? noun.slice(0, 2) + noun.slice(3) : noun;
  return `${adjectives[index % 20][language]} ${typed} ${styles[Math.floor(index / 400) % 25][language]} ${tags[Math.floor(index / 10_000) % 30]}`;
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
  // Asked twice: an answer goes gzipped from its second ask for gzip.
  await bytesOf(target.web.url + list());
  const first = await bytesOf(target.web.url + list());
  const etag = first.headers.etag;
  if (!etag) throw new Error('the flat list answered without an ETag');
  console.log(`the flat list: ${first.body.length} bytes as sent (${first.headers['content-encoding'] ?? 'identity'})`);
  // The bare route sending the flat list's bytes as sent: what the page costs with nothing computed.
  const pageFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-catalog-')), 'page.json');
  writeFileSync(pageFile, first.body);
  const samePage = await startBareKoa(pageFile);

  const load = { concurrency, durationMs, warmupMs };
  const measured = (server: ServiceProcess, request: (index: number) => LoadRequest) => () =>
    withServerCpu(server.child.pid!, () => runLoad(server.url, request, load));
  const healthz = () => ({ path: '/healthz' });
  const figures: CatalogFigure[] = [];
  const against = async (
    name: string,
    request: (index: number) => LoadRequest,
    goal: { ratio: number; p95Ms?: number; text: string },
  ) => {
    const { baseline, subject, ratio } = await compareLoads(measured(target.bare, healthz), measured(target.web, request));
    const met = ratio >= goal.ratio && (goal.p95Ms === undefined || subject.p95Ms <= goal.p95Ms);
    figures.push({ name, subject, baseline, ratio, goal: goal.text, met });
    console.log(`${formatLoad('bare Koa', baseline)}   server CPU ${baseline.serverCpuUsPerRequest} us/request`);
    console.log(`${formatLoad(name, subject)}   server CPU ${subject.serverCpuUsPerRequest} us/request`);
    console.log(`  ${percent(ratio)} of bare Koa under the same client (goal ${goal.text}); server capacity by CPU per request: ${percent(capacityShare(baseline, subject))}`);
  };
  try {
    const samePageRound = await compareLoads(measured(target.bare, healthz), measured(samePage, () => ({ path: list() })));
    console.log(`${formatLoad('bare Koa', samePageRound.baseline)}   server CPU ${samePageRound.baseline.serverCpuUsPerRequest} us/request`);
    console.log(`${formatLoad('bare Koa sending the flat list\'s bytes', samePageRound.subject)}   server CPU ${samePageRound.subject.serverCpuUsPerRequest} us/request`);
    console.log(`  ${percent(samePageRound.ratio)} of bare Koa: the most a page of these bytes reaches under this client (it shares the 2 cores); server capacity ${percent(capacityShare(samePageRound.baseline, samePageRound.subject))}`);
    await against('GET /v1/effects (flat list, curated order), 50 clients', () => ({ path: list(), headers: phone }), { ratio: 0.85, text: '>= 85%' });
    await against('GET /v1/effects?category= (category order), 50 clients', (index) => ({ path: category(index), headers: phone }), { ratio: 0.85, text: '>= 85%' });
    await against('GET /v1/effects?search= (distinct queries), 50 clients', () => ({ path: nextSearch(), headers: phone }), { ratio: 0.4, p95Ms: 25, text: '>= 40%, p95 <= 25 ms' });
    await against('GET /v1/effects?search= (one repeated query), 50 clients', () => ({ path: `/v1/effects?limit=20&search=${encodeURIComponent('зимний портрет')}`, headers: phone }), { ratio: 0.85, text: 'as the list' });
    await against('GET /v1/effects, If-None-Match (304), 50 clients', () => ({ path: list(), headers: { ...phone, 'if-none-match': etag } }), { ratio: 0.5, text: '>= 50%' });
  } finally {
    await samePage.stop();
    rmSync(path.dirname(pageFile), { recursive: true, force: true });
  }

  const few = { concurrency: 4, durationMs, warmupMs };
  const latency = async (name: string, request: (index: number) => LoadRequest, goalMs: number) => {
    const subject = await withServerCpu(target.web.child.pid!, () => runLoad(target.web.url, request, few));
    figures.push({ name, subject, baseline: null, ratio: null, goal: `p95 < ${goalMs} ms`, met: subject.p95Ms < goalMs });
    console.log(`${formatLoad(name, subject)}   (goal p95 < ${goalMs} ms)`);
  };
  console.log('\n4 concurrent clients:');
  await latency('flat list, 4 clients', () => ({ path: list(), headers: phone }), 10);
  await latency('category page, 4 clients', (index) => ({ path: category(index), headers: phone }), 10);
  await latency('search, distinct queries, 4 clients', () => ({ path: nextSearch(), headers: phone }), 25);
  return figures;
}

/** What a phone's HTTP stack sends with every request (OkHttp, URLSession): it inflates the answer itself. */
const phone = { 'accept-encoding': 'gzip' };

/** One GET as a phone sends it, its answer's bytes as they came (not inflated). */
function bytesOf(url: string): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: phone }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;

/** How many of the subject's requests the server's CPU serves for each of the baseline's. */
const capacityShare = (baseline: Measured, subject: Measured) => baseline.serverCpuUsPerRequest / Math.max(1, subject.serverCpuUsPerRequest);

async function main(stack: ScratchStack): Promise<void> {
  const bare = await startBareKoa();
  const web = await startService(['web'], stack.serviceEnv({ LOG_LEVEL: 'warn' }));
  try {
    const figures = await benchCatalog({ databaseUrl: stack.databaseUrl, web, bare });
    for (const figure of figures) {
      reportFigure({
        figure: `catalog of 10,000 effects: ${figure.name}`,
        value: figure.ratio === null
          ? `p95 ${figure.subject.p95Ms} ms (${figure.subject.rps} req/s)`
          : `${percent(figure.ratio)} (${figure.subject.rps} req/s, p95 ${figure.subject.p95Ms} ms); server CPU ${figure.subject.serverCpuUsPerRequest} us a request = ${percent(capacityShare(figure.baseline!, figure.subject))} of bare Koa's capacity`,
        baseline: figure.baseline ? `bare Koa ${figure.baseline.rps} req/s, ${figure.baseline.serverCpuUsPerRequest} us a request` : '',
        goal: figure.goal,
        met: figure.met,
      });
    }
  } finally {
    await web.stop();
    await bare.stop();
  }
}

if (require.main === module) runBench(main);
