import { expect } from 'chai';
import { effectView } from '../../../api/catalog/effect-view';
import { findLaunchableEffect } from '../../../db/catalog/launchable';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';
import { addAuthor, addCategory, addEffect, addTag, slugsOf } from './fixtures';

describe('catalog: categories, effects, tags, authors', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  describe('GET /v1/categories', () => {
    beforeEach(async () => {
      await addCategory('fun', { position: 5, name: { ru: 'Весёлое', en: 'Fun' }, icon: '🎉' });
      await addCategory('archive', { position: 1, enabled: false });
      await addCategory('portraits', { position: 2, name: { ru: 'Портреты', en: 'Portraits' } });
      await addEffect('a', { categories: ['portraits', 'fun'], successCount: 3 });
      await addEffect('b', { categories: ['portraits'], successCount: 4 });
      await addEffect('hidden', { categories: ['portraits'], hidden: true, successCount: 100 });
    });

    it('lists enabled categories only, in operator order, positions counting from 0, names in ru by default', async () => {
      const answer = await t.api.get('/v1/categories');
      expect(answer.status).to.equal(200);
      expect(answer.body.map((category: any) => [category.slug, category.position, category.name])).to.deep.equal([
        ['portraits', 0, 'Портреты'],
        ['fun', 1, 'Весёлое'],
      ]);
      expect(answer.body[1]).to.include({ icon: '🎉' });
      expect(answer.body[1].id).to.match(/^[0-9a-f-]{36}$/);
    });

    it('names categories in English with locale=en', async () => {
      const answer = await t.api.get('/v1/categories?locale=en');
      expect(answer.body.map((category: any) => category.name)).to.deep.equal(['Portraits', 'Fun']);
    });

    it('counts an effect in every category it is in, hidden effects not at all; gen_count adds up successes', async () => {
      const answer = await t.api.get('/v1/categories');
      expect(answer.body.map((category: any) => [category.slug, category.effect_count, category.gen_count])).to.deep.equal([
        ['portraits', 2, 7],
        ['fun', 1, 3],
      ]);
    });

    it('rejects a locale other than ru and en with 422', async () => {
      const answer = await t.api.get('/v1/categories?locale=de');
      expect(answer.status).to.equal(422);
      expect(answer.body.error.code).to.equal('validation_error');
      expect(answer.body.error.details[0].loc).to.deep.equal(['query', 'locale']);
    });
  });

  describe('GET /v1/effects: rule 1, only effects with an enabled category', () => {
    beforeEach(async () => {
      await addCategory('portraits');
      await addCategory('archive', { enabled: false });
      await addTag('retro');
      const snow = { ru: 'Снег', en: 'Snow' };
      await addEffect('listed', { categories: ['portraits'], tags: ['retro'], position: 1, description: snow });
      await addEffect('archived', { categories: ['archive'], tags: ['retro'], position: 2, description: snow });
      await addEffect('direct-only', { position: 3, description: snow });
    });

    it('lists only effects that sit in an enabled category, with filters and search too', async () => {
      expect(slugsOf(await t.api.get('/v1/effects'))).to.deep.equal(['listed']);
      expect(slugsOf(await t.api.get('/v1/effects?tag=retro'))).to.deep.equal(['listed']);
      expect(slugsOf(await t.api.get('/v1/effects?search=snow&locale=en'))).to.deep.equal(['listed']);
      expect(slugsOf(await t.api.get('/v1/effects?category=archive'))).to.deep.equal([]);
    });

    it('leaves them out of tag counts', async () => {
      expect((await t.api.get('/v1/tags')).body).to.deep.equal([{ slug: 'retro', name: 'retro', effect_count: 1 }]);
    });

    it('follows a category being disabled or enabled, and an effect losing or gaining its categories', async () => {
      const { db } = services();
      await db('categories').where({ slug: 'portraits' }).update({ enabled: false });
      expect(slugsOf(await t.api.get('/v1/effects'))).to.deep.equal([]);
      await db('categories').where({ slug: 'archive' }).update({ enabled: true });
      expect(slugsOf(await t.api.get('/v1/effects'))).to.deep.equal(['archived']);
      const archived = await db('effects').where({ slug: 'archived' }).first('id');
      await db('effect_categories').where({ effect_id: archived.id }).delete();
      expect(slugsOf(await t.api.get('/v1/effects'))).to.deep.equal([]);
      const direct = await db('effects').where({ slug: 'direct-only' }).first('id');
      const archive = await db('categories').where({ slug: 'archive' }).first('id');
      await db('effect_categories').insert({ effect_id: direct.id, category_id: archive.id });
      expect(slugsOf(await t.api.get('/v1/effects'))).to.deep.equal(['direct-only']);
    });

    it('still opens them by slug and by id', async () => {
      const bySlug = await t.api.get('/v1/effects/archived');
      expect(bySlug.status).to.equal(200);
      const byId = await t.api.get(`/v1/effects/${bySlug.body.id}`);
      expect(byId.body.slug).to.equal('archived');
      const direct = await t.api.get('/v1/effects/direct-only');
      expect(direct.body).to.include({ category_id: null });
      expect(direct.body.category_ids).to.deep.equal([]);
    });
  });

  describe('GET /v1/effects: rule 2, filters', () => {
    let portraitsId: string;

    beforeEach(async () => {
      portraitsId = await addCategory('portraits');
      await addCategory('fun');
      await addTag('winter');
      await addEffect('both', { categories: ['portraits', 'fun'], tags: ['winter'], position: 1 });
      await addEffect('portrait-only', { categories: ['portraits'], position: 2 });
      await addEffect('fun-only', { categories: ['fun'], tags: ['winter'], position: 3 });
    });

    it('shows an effect once in the flat list, whatever its number of categories', async () => {
      const answer = await t.api.get('/v1/effects');
      expect(slugsOf(answer)).to.deep.equal(['both', 'portrait-only', 'fun-only']);
      expect(answer.body).to.include({ total: 3, limit: 20, offset: 0 });
    });

    it('matches any of the categories, by slug or by id', async () => {
      expect(slugsOf(await t.api.get('/v1/effects?category=fun'))).to.deep.equal(['both', 'fun-only']);
      expect(slugsOf(await t.api.get(`/v1/effects?category=${portraitsId}`))).to.deep.equal(['both', 'portrait-only']);
    });

    it('combines category and tag', async () => {
      expect(slugsOf(await t.api.get('/v1/effects?category=portraits&tag=winter'))).to.deep.equal(['both']);
      expect(slugsOf(await t.api.get('/v1/effects?tag=winter'))).to.deep.equal(['both', 'fun-only']);
    });

    it('answers an unknown category or tag with an empty list, and takes empty parameters as no filter', async () => {
      expect((await t.api.get('/v1/effects?category=nope')).body).to.deep.equal({ items: [], total: 0, limit: 20, offset: 0 });
      expect(slugsOf(await t.api.get('/v1/effects?tag=nope'))).to.deep.equal([]);
      expect(slugsOf(await t.api.get('/v1/effects?category=&tag=&search='))).to.have.length(3);
    });

    it('rejects a category longer than 64 characters with 422', async () => {
      const answer = await t.api.get(`/v1/effects?category=${'a'.repeat(65)}`);
      expect(answer.status).to.equal(422);
      expect(answer.body.error.details[0].loc).to.deep.equal(['query', 'category']);
    });

    it('pages with total, limit and offset', async () => {
      const answer = await t.api.get('/v1/effects?limit=1&offset=1');
      expect(slugsOf(answer)).to.deep.equal(['portrait-only']);
      expect(answer.body).to.include({ total: 3, limit: 1, offset: 1 });
      expect((await t.api.get('/v1/effects?offset=50')).body).to.include({ total: 3 });
    });
  });

  describe('GET /v1/effects: rule 3, order inside a category', () => {
    const now = Date.now();
    const daysAgo = (days: number) => new Date(now - days * 86_400_000);

    beforeEach(async () => {
      await addCategory('portraits');
      await addCategory('fun');
      // Curated positions deliberately disagree with the category order.
      await addEffect('popular', { categories: ['portraits', 'fun'], successCount: 50, position: 1 });
      await addEffect('less-popular', { categories: ['portraits'], successCount: 10, position: 2 });
      await addEffect('bottom', { categories: [{ slug: 'portraits', pinnedBottom: 1 }], successCount: 999, position: 3 });
      await addEffect('demoted', { categories: [{ slug: 'portraits', pinnedTop: 1 }, 'fun'], demoted: true, successCount: 999, position: 4 });
      await addEffect('top-2', { categories: [{ slug: 'portraits', pinnedTop: 2 }], position: 5 });
      await addEffect('top-1', { categories: [{ slug: 'portraits', pinnedTop: 1 }], position: 6 });
      for (const [index, days] of [1, 2, 3, 4].entries()) {
        await addEffect(`new-${index + 1}`, { categories: [{ slug: 'portraits', newSince: daysAgo(days) }], position: 10 + index });
      }
      await addEffect('old-new', { categories: [{ slug: 'portraits', newSince: daysAgo(40) }], successCount: 20, position: 20 });
    });

    it('puts pinned-top first, then the new-effect slots, then by successes, then pinned-bottom, then the demoted', async () => {
      expect(slugsOf(await t.api.get('/v1/effects?category=portraits&limit=100'))).to.deep.equal([
        'top-1', 'top-2',
        // Three slots (CATALOG_NEW_EFFECT_SLOTS) for the newest; the fourth new one competes by successes.
        'new-1', 'new-2', 'new-3',
        'popular', 'old-new', 'less-popular', 'new-4',
        'bottom',
        'demoted',
      ]);
    });

    it('keeps a separate order per category', async () => {
      await services().db('effects').where({ slug: 'popular' }).update({ success_count: 0 });
      await addEffect('fun-hit', { categories: ['fun'], successCount: 5, position: 30 });
      expect(slugsOf(await t.api.get('/v1/effects?category=fun'))).to.deep.equal(['fun-hit', 'popular', 'demoted']);
    });

    it('keeps the curated order in the flat list, demoted effects last', async () => {
      expect(slugsOf(await t.api.get('/v1/effects?limit=100'))).to.deep.equal([
        'popular', 'less-popular', 'bottom', 'top-2', 'top-1', 'new-1', 'new-2', 'new-3', 'new-4', 'old-new', 'demoted',
      ]);
    });

    it('counts the same order across pages', async () => {
      const first = slugsOf(await t.api.get('/v1/effects?category=portraits&limit=4'));
      const second = slugsOf(await t.api.get('/v1/effects?category=portraits&limit=4&offset=4'));
      expect([...first, ...second]).to.deep.equal(['top-1', 'top-2', 'new-1', 'new-2', 'new-3', 'popular', 'old-new', 'less-popular']);
    });
  });

  describe('Effect fields', () => {
    it('takes category_id from category_ids, enabled categories first', async () => {
      const archiveId = await addCategory('archive', { enabled: false });
      const funId = await addCategory('fun');
      const portraitsId = await addCategory('portraits');
      await addEffect('mixed', { categories: ['archive', 'fun', 'portraits'] });
      const answer = await t.api.get('/v1/effects/mixed');
      expect(answer.body.category_ids).to.deep.equal([funId, portraitsId, archiveId]);
      expect(answer.body.category_id).to.equal(funId);
    });

    it('sums min_inputs and max_inputs over the people', async () => {
      await addCategory('fun');
      await addEffect('family', {
        categories: ['fun'],
        characters: [{ min_photos: 1, max_photos: 3 }, { min_photos: 1, max_photos: 3 }, { min_photos: 0, max_photos: 2 }],
      });
      const effect = (await t.api.get('/v1/effects')).body.items[0];
      expect(effect.characters).to.deep.equal([{ min_photos: 1, max_photos: 3 }, { min_photos: 1, max_photos: 3 }, { min_photos: 0, max_photos: 2 }]);
      expect(effect).to.include({ min_inputs: 2, max_inputs: 8 });
    });

    it('carries every contract field, localized, with preview null until copies exist', async () => {
      await addCategory('fun');
      await addTag('winter');
      await addTag('retro');
      await addEffect('full', {
        categories: ['fun'], tags: ['winter', 'retro'], cost: 25,
        name: { ru: 'Зима', en: 'Winter' }, description: { ru: 'Снег', en: 'Snow' },
      });
      const ru = (await t.api.get('/v1/effects/full')).body;
      expect(ru).to.have.all.keys('id', 'slug', 'category_id', 'category_ids', 'name', 'description', 'preview_url', 'preview_video_url',
        'preview_animation_url', 'preview', 'cost', 'characters', 'max_inputs', 'min_inputs', 'output_type', 'author_id', 'author_name', 'tags');
      expect(ru).to.include({ name: 'Зима', description: 'Снег', cost: 25, output_type: 'image', preview: null, author_id: null, author_name: null });
      expect(ru.tags).to.deep.equal(['winter', 'retro']);
      expect(ru.preview_url).to.match(/^http.*effects\/fixture\/full\/poster\.jpg$/);
      expect((await t.api.get('/v1/effects/full?locale=en')).body).to.include({ name: 'Winter', description: 'Snow' });
    });

    it('gives author_name null for an official effect, a nameless author and a deleted author', async () => {
      await addCategory('fun');
      await addEffect('official', { categories: ['fun'] });
      await addEffect('named', { categories: ['fun'], authorId: await addAuthor({ name: 'Mira' }) });
      await addEffect('nameless', { categories: ['fun'], authorId: await addAuthor({ name: '  ' }) });
      await addEffect('deleted', { categories: ['fun'], authorId: await addAuthor({ name: 'Gone', deleted: true }) });
      const items = (await t.api.get('/v1/effects')).body.items;
      expect(items.map((item: any) => [item.slug, item.author_name, item.author_id !== null])).to.deep.equal([
        ['official', null, false],
        ['named', 'Mira', true],
        ['nameless', null, true],
        ['deleted', null, true],
      ]);
    });

    it('drops the name of an author whose account is deleted', async () => {
      await addCategory('fun');
      const user = await makeUser({ ageDays: 30 });
      await addEffect('community', { categories: ['fun'], authorId: await addAuthor({ name: 'Real Name', userId: user.id }) });
      await services().db('users').where({ id: user.id }).delete();
      expect((await t.api.get('/v1/effects/community')).body.author_name).to.equal(null);
    });
  });

  describe('GET /v1/effects/{id_or_slug}', () => {
    it('answers 404 not_found for an absent effect, by slug or by id', async () => {
      for (const path of ['/v1/effects/nope', '/v1/effects/6f1c1d8e-3a55-4a7e-9d5e-0c0f8b1e2a33', `/v1/effects/${'x'.repeat(100)}`]) {
        const answer = await t.api.get(path);
        expect(answer.status).to.equal(404);
        expect(answer.body.error.code).to.equal('not_found');
      }
    });

    it('answers 404 for an effect a moderator hid', async () => {
      await addEffect('gone', { hidden: true });
      expect((await t.api.get('/v1/effects/gone')).status).to.equal(404);
    });
  });

  describe('author views', () => {
    let authorId: string;

    beforeEach(async () => {
      await addCategory('fun');
      authorId = await addAuthor({ name: 'Mira' });
      await addEffect('community', { categories: ['fun'], authorId });
      await addEffect('official', { categories: ['fun'] });
    });

    const views = () => services().db('author_views').where({ author_id: authorId }).count<{ count: number }[]>('* as count').then(([row]) => row.count);

    it('counts one view per viewer per day when a community effect is opened with a token', async () => {
      const viewer = await makeUser({ ageDays: 30 });
      await t.api.get('/v1/effects/community', { token: viewer.token });
      await t.api.get('/v1/effects/community', { token: viewer.token });
      expect(await views()).to.equal(1);
      await t.api.get('/v1/effects/community', { token: (await makeUser({ guest: true, ageDays: 30 })).token });
      expect(await views()).to.equal(2);
    });

    it('counts nothing without a token, with a broken one, for official effects and for the author themself', async () => {
      const author = await makeUser({ ageDays: 30 });
      await services().db('authors').where({ id: authorId }).update({ user_id: author.id });
      expect((await t.api.get('/v1/effects/community')).status).to.equal(200);
      expect((await t.api.get('/v1/effects/community', { token: 'broken.token.value' })).status).to.equal(200);
      await t.api.get('/v1/effects/official', { token: (await makeUser({ ageDays: 30 })).token });
      await t.api.get('/v1/effects/community', { token: author.token });
      expect(await views()).to.equal(0);
    });
  });

  describe('GET /v1/tags', () => {
    it('counts over the whole catalog, most frequent first, localized, only tags on listed effects', async () => {
      await addCategory('portraits');
      await addCategory('fun');
      await addCategory('archive', { enabled: false });
      await addTag('winter', { ru: 'зима', en: 'winter' });
      await addTag('portrait', { ru: 'портрет', en: 'portrait' });
      await addTag('unused');
      await addTag('archived');
      await addEffect('a', { categories: ['portraits'], tags: ['winter', 'portrait'] });
      await addEffect('b', { categories: ['fun'], tags: ['portrait'] });
      await addEffect('c', { categories: ['fun', 'portraits'], tags: ['portrait'] });
      await addEffect('d', { categories: ['archive'], tags: ['archived', 'winter'] });
      await addEffect('e', { categories: ['fun'], tags: ['unused'], hidden: true });
      expect((await t.api.get('/v1/tags')).body).to.deep.equal([
        { slug: 'portrait', name: 'портрет', effect_count: 3 },
        { slug: 'winter', name: 'зима', effect_count: 1 },
      ]);
      expect((await t.api.get('/v1/tags?locale=en')).body[1]).to.deep.equal({ slug: 'winter', name: 'winter', effect_count: 1 });
    });
  });

  describe('GET /v1/authors/{author_id}', () => {
    it('shows the name, avatar and only the published effects, paged', async () => {
      await addCategory('fun');
      await addCategory('archive', { enabled: false });
      const authorId = await addAuthor({ name: 'Mira' });
      await addEffect('one', { categories: ['fun'], authorId, position: 1 });
      await addEffect('two', { categories: ['fun'], authorId, position: 2 });
      await addEffect('unlisted', { categories: ['archive'], authorId, position: 3 });
      await addEffect('removed', { categories: ['fun'], authorId, hidden: true, position: 4 });
      await addEffect('someone-else', { categories: ['fun'], position: 0 });
      const answer = await t.api.get(`/v1/authors/${authorId}?limit=1&locale=en`);
      expect(answer.status).to.equal(200);
      expect(answer.body).to.have.all.keys('id', 'name', 'avatar_url', 'effects');
      expect(answer.body).to.include({ id: authorId, name: 'Mira', avatar_url: null });
      expect(answer.body.effects).to.include({ total: 2, limit: 1, offset: 0 });
      expect(answer.body.effects.items.map((item: any) => [item.slug, item.name])).to.deep.equal([['one', 'Effect one']]);
    });

    it('answers 404 for an absent, disabled or deleted author, one without published effects, and a malformed id', async () => {
      await addCategory('fun');
      await addCategory('archive', { enabled: false });
      const disabled = await addAuthor({ disabled: true });
      await addEffect('by-disabled', { categories: ['fun'], authorId: disabled });
      const deleted = await addAuthor({ deleted: true });
      await addEffect('by-deleted', { categories: ['fun'], authorId: deleted });
      const unpublished = await addAuthor();
      await addEffect('unlisted', { categories: ['archive'], authorId: unpublished });
      const absent = '2b0d7c0e-5a4f-4f1e-8d8c-1e9f0a6b7c5d';
      for (const id of [absent, disabled, deleted, unpublished, 'not-a-uuid']) {
        const answer = await t.api.get(`/v1/authors/${id}`);
        expect(answer.status, id).to.equal(404);
        expect(answer.body.error.code).to.equal('not_found');
      }
    });
  });

  describe('for other domains', () => {
    it('findLaunchableEffect opens by id or slug, with no enabled category, and tells whether it is hidden', async () => {
      const id = await addEffect('direct-only', { cost: 40, model: 'video', characters: [{ min_photos: 1, max_photos: 2 }] });
      await addEffect('removed', { hidden: true });
      const { db } = services();
      const bySlug = await findLaunchableEffect(db, 'direct-only');
      expect(bySlug).to.deep.equal({
        id, slug: 'direct-only', cost: 40, characters: [{ min_photos: 1, max_photos: 2 }], output_type: 'image', model: 'video', model_max_photos: null, hidden: false, private_to: null, prompt: null, runs: null,
      });
      expect(await findLaunchableEffect(db, id)).to.deep.equal(bySlug);
      expect((await findLaunchableEffect(db, 'removed'))!.hidden).to.equal(true);
      expect(await findLaunchableEffect(db, 'nope')).to.equal(null);
    });

    it('effectView renders an effect as the contract Effect, hidden ones too', async () => {
      const id = await addEffect('removed', { hidden: true, name: { ru: 'Был', en: 'Was' } });
      const effect = await effectView(services().db, services().storage, id, 'en');
      expect(effect).to.include({ id, slug: 'removed', name: 'Was', category_id: null });
      expect(await effectView(services().db, services().storage, '6f1c1d8e-3a55-4a7e-9d5e-0c0f8b1e2a33', 'ru')).to.equal(null);
    });
  });
});
