import { expect } from 'chai';
import { computeEveryTime } from '../../../api/catalog/catalog-store';
import { listEffects } from '../../../api/catalog/effect-list';
import { searchWordForms } from '../../../api/catalog/search';
import { parseSearch } from '../../../api/catalog/search-words';
import type { ThematicSearch } from '../../../api/catalog/thematic-search';
import { generateBenchCatalog } from '../../../scripts/bench-catalog';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, type TestApp, useTestApp } from '../../harness';
import { addCategory, addEffect, addTag, slugsOf } from './fixtures';

/** A small catalog in both languages; positions give the catalog order. */
async function searchCatalog(): Promise<void> {
  await addCategory('portraits', { name: { ru: 'Портреты', en: 'Portraits' } });
  await addCategory('fun', { name: { ru: 'Весёлое', en: 'Fun' } });
  await addCategory('archive', { enabled: false, name: { ru: 'Архив', en: 'Archive' } });
  await addTag('winter', { ru: 'зима', en: 'winter' });
  await addTag('portrait', { ru: 'портрет', en: 'portrait' });
  await addEffect('winter-portrait', {
    position: 1, categories: ['fun'], tags: ['winter'],
    name: { ru: 'Зимний портрет', en: 'Winter portrait' },
    description: { ru: 'Снежный лес и мягкий свет', en: 'Snowy forest and soft light' },
  });
  await addEffect('portrait-series', {
    position: 2, categories: [{ slug: 'fun', pinnedTop: 1 }],
    name: { ru: 'Серия кадров', en: 'Shot series' },
    description: { ru: 'Серия портретов для двоих', en: 'A series of portraits for two' },
  });
  await addEffect('golden', {
    position: 3, categories: [{ slug: 'fun', pinnedTop: 2 }, 'archive'], tags: ['portrait'],
    name: { ru: 'Золотой шедевр', en: 'Golden masterpiece' },
    description: { ru: 'Старые мастера', en: 'Old masters' },
  });
  await addEffect('dance', {
    position: 4, categories: ['fun'],
    name: { ru: 'Танцевальное видео', en: 'Dance video' },
    description: { ru: 'Ролик под музыку', en: 'A clip to the music' },
  });
  await addEffect('archived-portrait', {
    position: 5, categories: ['archive'],
    name: { ru: 'Старый портрет', en: 'Old portrait' },
  });
}

describe('catalog search (rule 4)', () => {
  const t = useTestApp();
  // Most tests only read: the catalog is made once; tests that add to it take their additions away.
  before(async () => {
    await resetDatabase();
    await searchCatalog();
  });

  const search = async (text: string, locale = 'ru', extra = '') =>
    slugsOf(await t.api.get(`/v1/effects?locale=${locale}&limit=100&search=${encodeURIComponent(text)}${extra}`));

  describe('word forms', () => {
    it('finds "Зимний портрет" by "портреты" and a description with "портретов" by "портрет"', async () => {
      expect(await search('портреты')).to.include.members(['winter-portrait', 'portrait-series']);
      expect(await search('портрет')).to.include.members(['winter-portrait', 'portrait-series']);
    });

    it('finds "Winter portrait" by "portraits" and a description with "portraits" by "portrait"', async () => {
      expect(await search('portraits', 'en')).to.include.members(['winter-portrait', 'portrait-series']);
      expect(await search('portrait', 'en')).to.include.members(['winter-portrait', 'portrait-series']);
    });

    it('folds ё into е', async () => {
      expect(await search('веселое')).to.have.length(4);
    });
  });

  describe('typos', () => {
    it('tolerates a one-letter typo', async () => {
      expect(await search('партрет')).to.include('winter-portrait');
      expect(await search('portrat', 'en')).to.include('winter-portrait');
      expect(await search('танцивальное')).to.deep.equal(['dance']);
    });

    it('tolerates two letters in a long word', async () => {
      expect(await search('pertrat', 'en')).to.include('winter-portrait');
      expect(await search('шидевор')).to.deep.equal(['golden']);
    });

    it('tolerates none in words shorter than four letters', async () => {
      expect(await search('fan', 'en')).to.deep.equal([]);
      expect(await search('fun', 'en')).to.have.length(4);
    });

    it('knows the words of an effect added a moment ago', async () => {
      await addEffect('samurai', { categories: ['fun'], name: { ru: 'Кибер-самурай', en: 'Cyber samurai' }, position: 9 });
      try {
        expect(await search('samuray', 'en')).to.deep.equal(['samurai']);
        expect(await search('самурай')).to.deep.equal(['samurai']);
      } finally {
        await services().db('effects').where({ slug: 'samurai' }).delete();
      }
    });
  });

  describe('prefixes and fragments', () => {
    it('matches the start of a word in a name, a tag or a category', async () => {
      expect(await search('порт')).to.include('winter-portrait');
      expect(await search('зим')).to.deep.equal(['winter-portrait']);
      expect(await search('portr', 'en')).to.include.members(['winter-portrait', 'golden']);
      expect(await search('весел')).to.have.length(4);
    });

    it('matches only whole words in a description', async () => {
      expect(await search('снеж')).to.deep.equal([]);
      expect(await search('снежный')).to.deep.equal(['winter-portrait']);
      expect(await search('snow', 'en')).to.deep.equal([]);
      expect(await search('snowy', 'en')).to.deep.equal(['winter-portrait']);
    });

    it('never matches a fragment from the middle of a word', async () => {
      expect(await search('трет')).to.deep.equal([]);
      expect(await search('trait', 'en')).to.deep.equal([]);
      expect(await search('евальное')).to.deep.equal([]);
    });

    it('ignores the name of a disabled category', async () => {
      expect(await search('архив')).to.deep.equal([]);
      expect(await search('archive', 'en')).to.deep.equal([]);
    });
  });

  describe('several words', () => {
    it('needs all words, in any order and across fields', async () => {
      expect(await search('портрет зимний')).to.deep.equal(['winter-portrait']);
      expect(await search('портрет золотой')).to.deep.equal(['golden']);
      expect(await search('portrait golden', 'en')).to.deep.equal(['golden']);
    });

    it('falls back to effects with part of the words when none has them all, most words first', async () => {
      expect(await search('золотой видео')).to.deep.equal(['golden', 'dance']);
      expect(await search('зимний танцевальное видео')).to.deep.equal(['dance', 'winter-portrait']);
      expect(await search('golden dance', 'en')).to.deep.equal(['golden', 'dance']);
    });

    it('counts only the first eight significant words', async () => {
      const filler = ['альфа', 'бета', 'гамма', 'дельта', 'омега', 'сигма', 'каппа'];
      expect(await search(['золотой', ...filler, 'видео'].join(' '))).to.deep.equal(['golden']);
      expect(await search(['золотой', ...filler.slice(1), 'видео'].join(' '))).to.deep.equal(['golden', 'dance']);
      // Request words are not significant: they do not use up the eight.
      expect(await search(['золотой', 'эффект', 'фото', ...filler.slice(1), 'видео'].join(' '))).to.deep.equal(['golden', 'dance']);
    });
  });

  describe('ranking', () => {
    after(async () => {
      await resetDatabase();
      await searchCatalog();
    });

    before(async () => {
      await addCategory('aurora', { name: { ru: 'Аврора', en: 'Aurora' } });
      await addTag('aurora', { ru: 'аврора', en: 'aurora' });
      await addEffect('in-description', { position: 11, categories: ['fun'], description: { ru: 'Сияет аврора', en: 'The aurora shines' } });
      await addEffect('in-tag', { position: 12, categories: ['fun'], tags: ['aurora'] });
      await addEffect('in-name', { position: 13, categories: ['fun'], name: { ru: 'Аврора', en: 'Aurora' } });
      await addEffect('in-category', { position: 14, categories: ['aurora'] });
      await addEffect('in-name-later', { position: 15, categories: ['fun'], name: { ru: 'Северная аврора', en: 'Northern aurora' } });
    });

    for (const [locale, word] of [['ru', 'аврора'], ['en', 'aurora']]) {
      it(`puts name matches above tag or category matches above description matches, ties in catalog order (${locale})`, async () => {
        expect(await search(word, locale)).to.deep.equal(['in-name', 'in-name-later', 'in-tag', 'in-category', 'in-description']);
      });
    }

    it('does not apply the category order inside a category', async () => {
      expect(slugsOf(await t.api.get('/v1/effects?category=fun'))).to.deep.equal(
        ['portrait-series', 'golden', 'winter-portrait', 'dance', 'in-description', 'in-tag', 'in-name', 'in-name-later'],
      );
      expect(await search('портрет', 'ru', '&category=fun')).to.deep.equal(['winter-portrait', 'golden', 'portrait-series']);
    });
  });

  describe('what the server removes from the string', () => {
    it('case, punctuation and extra spaces', async () => {
      expect(await search('  ЗИМНИЙ!!!   ,портрет?? ')).to.deep.equal(['winter-portrait']);
      expect(await search('WINTER...portrait', 'en')).to.deep.equal(['winter-portrait']);
    });

    it('request words in both languages', async () => {
      expect(await search('эффект для фото золотой')).to.deep.equal(['golden']);
      expect(await search('golden effect with photo', 'en')).to.deep.equal(['golden']);
      expect(await search('эффект фото')).to.have.length(4);
    });
  });

  describe('edge queries', () => {
    it('answers an empty or blank search with the plain list', async () => {
      const plain = await search('', 'ru');
      expect(plain).to.deep.equal(['winter-portrait', 'portrait-series', 'golden', 'dance']);
      expect(await search('   ')).to.deep.equal(plain);
    });

    it('answers a query with no letter or digit with an empty list', async () => {
      const answer = await t.api.get(`/v1/effects?search=${encodeURIComponent('!!! ?? ...')}`);
      expect(answer.body).to.deep.equal({ items: [], total: 0, limit: 20, offset: 0 });
    });

    it('rejects more than 300 characters with 422 validation_error and accepts 300', async () => {
      const tooLong = await t.api.get(`/v1/effects?search=${'а'.repeat(301)}`);
      expect(tooLong.status).to.equal(422);
      expect(tooLong.body.error.code).to.equal('validation_error');
      expect(tooLong.body.error.details[0].loc).to.deep.equal(['query', 'search']);
      expect((await t.api.get(`/v1/effects?search=${'а'.repeat(300)}`)).status).to.equal(200);
    });

    it('pages search results with the total of all matches', async () => {
      const answer = await t.api.get(`/v1/effects?search=${encodeURIComponent('веселое')}&limit=2&offset=1`);
      expect(slugsOf(answer)).to.deep.equal(['portrait-series', 'golden']);
      expect(answer.body.total).to.equal(4);
    });
  });

  describe('every word, part of the words, none', () => {
    it('finds effects with every word across name, tag, category and description, typo or prefix in any word', async () => {
      expect(await search('зимний партрет')).to.deep.equal(['winter-portrait']);
      expect(await search('зим порт')).to.deep.equal(['winter-portrait']);
      expect(await search('winter portrat soft', 'en')).to.deep.equal(['winter-portrait']);
      // "весёлое" is only the name of the category "fun", "снежный" only in a description.
      expect(await search('весёлое снежный')).to.deep.equal(['winter-portrait']);
      expect(await search('весёлое танцевальное')).to.deep.equal(['dance']);
      expect(await search('fun dance', 'en')).to.deep.equal(['dance']);
    });

    it('falls back to part of the words when a word matches nothing, the category word at its level', async () => {
      // Every effect of "fun" has "весел" through its category (level 2); "видео" is in the dance's name.
      expect(await search('весел видео ксилофон')).to.deep.equal(['dance', 'winter-portrait', 'portrait-series', 'golden']);
    });

    it('answers a query that matches nothing with an empty page and total 0', async () => {
      const answer = await t.api.get(`/v1/effects?search=${encodeURIComponent('ксилофон барабан')}`);
      expect(answer.body).to.deep.equal({ items: [], total: 0, limit: 20, offset: 0 });
      expect(await search('xylophone', 'en')).to.deep.equal([]);
    });

    it('matches in the language of the locale only, tag slugs in both', async () => {
      expect(await search('golden')).to.deep.equal([]);
      expect(await search('золотой', 'en')).to.deep.equal([]);
      expect(await search('winter')).to.deep.equal(['winter-portrait']);
      expect(await search('зимний', 'en')).to.deep.equal([]);
    });
  });

  describe('labels follow catalog changes in the same transaction', () => {
    after(async () => {
      await resetDatabase();
      await searchCatalog();
    });

    it('a category enabled or disabled takes its name into or out of search', async () => {
      const { db } = services();
      await db('categories').where({ slug: 'archive' }).update({ enabled: true });
      expect(await search('архив')).to.deep.equal(['golden', 'archived-portrait']);
      expect(await search('золотой архив')).to.deep.equal(['golden']);
      await db('categories').where({ slug: 'archive' }).update({ enabled: false });
      expect(await search('архив')).to.deep.equal([]);
      expect(await search('золотой архив')).to.deep.equal(['golden']);
    });

    it('a renamed tag or category is found by its new name only', async () => {
      const { db } = services();
      await db('tags').where({ slug: 'winter' }).update({ name_ru: 'стужа' });
      expect(await search('стужа')).to.deep.equal(['winter-portrait']);
      expect(await search('зима')).to.deep.equal([]);
      await db('categories').where({ slug: 'fun' }).update({ name_en: 'Joy' });
      expect(await search('joy', 'en')).to.have.length(4);
      expect(await search('fun', 'en')).to.deep.equal([]);
    });

    it('a tag or category linked, moved or unlinked changes what the effect matches', async () => {
      const { db } = services();
      const [dance, portraitTag, portraits, fun] = await Promise.all([
        db('effects').where({ slug: 'dance' }).first('id'),
        db('tags').where({ slug: 'portrait' }).first('id'),
        db('categories').where({ slug: 'portraits' }).first('id'),
        db('categories').where({ slug: 'fun' }).first('id'),
      ]);
      await db('effect_tags').insert({ effect_id: dance.id, tag_id: portraitTag.id });
      expect(await search('портрет видео')).to.deep.equal(['dance']);
      await db('effect_tags').where({ effect_id: dance.id, tag_id: portraitTag.id }).delete();
      // Partial matches again: names first (catalog order), then the tag, then the description.
      expect(await search('портрет видео')).to.deep.equal(['winter-portrait', 'dance', 'golden', 'portrait-series']);
      await db('effect_categories').where({ effect_id: dance.id, category_id: fun.id }).update({ category_id: portraits.id });
      expect(await search('портреты танцевальное')).to.deep.equal(['dance']);
      expect(await search('весел танцевальное')).to.deep.equal(['dance', 'winter-portrait', 'portrait-series', 'golden']);
    });

    it('emptying the tag links takes every tag name out of search', async () => {
      await services().db.raw('truncate effect_tags');
      expect(await search('зима')).to.deep.equal([]);
      expect(await search('зимний')).to.deep.equal(['winter-portrait']);
    });
  });

  describe('thematic search hook', () => {
    let themed: TestApp;
    const asked: string[] = [];
    const fake: ThematicSearch = {
      closestEffects: async (query) => {
        asked.push(query);
        const ids = await Promise.all(['dance', 'winter-portrait', 'archived-portrait', 'portrait-series'].map(
          async (slug) => (await client(themed.url).get(`/v1/effects/${slug}`)).body.id as string,
        ));
        return ids;
      },
    };

    afterEach(async () => {
      await themed?.close();
      asked.length = 0;
    });

    it('adds listed, unmatched effects after the word matches when THEMATIC_SEARCH is on', async () => {
      themed = await startTestApp({ config: { THEMATIC_SEARCH: '1' }, thematicSearch: fake });
      const answer = await client(themed.url).get(`/v1/effects?search=${encodeURIComponent('зимний')}`);
      expect(slugsOf(answer)).to.deep.equal(['winter-portrait', 'dance', 'portrait-series']);
      expect(answer.body.total).to.equal(3);
      // Pages run on from the word matches into the thematic ones.
      const page = (offset: number) => client(themed.url).get(`/v1/effects?search=${encodeURIComponent('зимний')}&limit=2&offset=${offset}`);
      expect(slugsOf(await page(0))).to.deep.equal(['winter-portrait', 'dance']);
      const second = await page(1);
      expect(slugsOf(second)).to.deep.equal(['dance', 'portrait-series']);
      expect(second.body.total).to.equal(3);
      expect(slugsOf(await page(2))).to.deep.equal(['portrait-series']);
    });

    it('is not asked for a query under three characters, nor when the flag is off', async () => {
      themed = await startTestApp({ config: { THEMATIC_SEARCH: '1' }, thematicSearch: fake });
      expect(slugsOf(await client(themed.url).get(`/v1/effects?search=${encodeURIComponent('зи')}`))).to.deep.equal(['winter-portrait']);
      await themed.close();
      themed = await startTestApp({ thematicSearch: fake });
      expect(slugsOf(await client(themed.url).get(`/v1/effects?search=${encodeURIComponent('зимний')}`))).to.deep.equal(['winter-portrait']);
      expect(asked).to.deep.equal([]);
    });
  });
});

describe('catalog search on a large catalog', function () {
  this.timeout(60_000);

  before(async () => {
    await resetDatabase();
    await generateBenchCatalog(services().db, 3000);
  });

  /**
   * What Postgres answers for the same words, the slow way: every listed effect's fields tested
   * with tsquery, word by word, then the rules of `searchEffectIds` in plain SQL.
   */
  async function answerOfPostgres(words: string[][]): Promise<{ total: number; ids: string[] }> {
    const quoted = (forms: string[]) => forms.map((form) => `'${form}'`).join(' | ');
    const { rows } = await services().db.raw(
      `with w as (select * from unnest(:starts::text[], :forms::text[]) with ordinality as w(start, forms, position)),
       levels as (
         select e.id, case
             when s.name_vector_ru @@ w.start::tsquery then 3
             when s.label_vector_ru @@ w.start::tsquery then 2
             when s.description_vector_ru @@ w.forms::tsquery then 1
             else 0 end as level
         from effects e join effect_search s on s.effect_id = e.id cross join w where e.listed
       ),
       scored as (
         select id, count(*) filter (where level > 0) as matched, count(*) filter (where level = 3) as in_name,
           count(*) filter (where level = 2) as in_labels, count(*) filter (where level = 1) as in_description
         from levels group by id having count(*) filter (where level > 0) > 0
       ),
       chosen as (select * from scored where matched = :count or not exists (select 1 from scored where matched = :count))
       select (select count(*)::int from chosen) as total, array(
         select c.id from chosen c join effects e on e.id = c.id
         order by c.matched desc, c.in_name desc, c.in_labels desc, c.in_description desc, e.demoted_at is not null, e.position, e.created_at, e.id
         limit 100) as ids`,
      { starts: words.map((forms) => `'${forms[0]}':* | ${quoted(forms)}`), forms: words.map(quoted), count: words.length },
    );
    return rows[0];
  }

  const queries = [
    'портрет', 'портреты', 'порт', 'зим', 'партрет', 'самурай', 'аниме', 'фэнтези', 'мягким', 'светом', 'neon', 'gold', 'праздники',
    'зимний портрет', 'зимний портрет аниме', 'ледяной рыцарь нуар', 'рыцарь космос', 'кот', 'весёлое танец', 'уличный астронавт укиё-э',
    'cosmic wizard', 'мрамор барокко', 'джаз музыкант комикс',
  ];
  // The one query that matches nothing: every other comparison is between non-empty answers.
  const matchingNothing = 'кот';

  for (const query of queries) {
    it(`answers "${query}" from memory exactly as Postgres's tsquery matching and the rules in SQL do`, async () => {
      const { db } = services();
      const parsed = parseSearch(query);
      if (parsed.kind !== 'words') throw new Error(`"${query}" is not a search by words`);
      const words = (await searchWordForms(db, parsed.words, 'ru', computeEveryTime)).filter((forms) => forms.length > 0);
      const expected = await answerOfPostgres(words);
      const answer = await listEffects(db, (key) => key, { locale: 'ru', search: query, paging: { limit: 100, offset: 0 }, newEffects: { slots: 3, days: 14 }, offered: ['simulator'] });
      expect(expected.total === 0).to.equal(query === matchingNothing);
      expect(answer.total).to.equal(expected.total);
      expect(answer.items.map((effect) => effect.id)).to.deep.equal(expected.ids);
      // A page further on: only the places up to its end are ranked, the rest only counted.
      const later = await listEffects(db, (key) => key, { locale: 'ru', search: query, paging: { limit: 20, offset: 37 }, newEffects: { slots: 3, days: 14 }, offered: ['simulator'] });
      expect(later.total).to.equal(expected.total);
      expect(later.items.map((effect) => effect.id)).to.deep.equal(expected.ids.slice(37, 57));
    });
  }
});
