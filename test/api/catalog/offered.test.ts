import { expect } from 'chai';
import type { Config } from '../../../config';
import type { ProviderKind } from '../../../common/model-route';
import { appClient, capturingLogger, resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { makeUser } from '../../users';
import { addAuthor, addCategory, addEffect, addTag, slugsOf } from './fixtures';

/** Accounts of these kinds instead of the simulator's two (no variable names another kind's accounts yet). */
const withAccounts = (...kinds: ProviderKind[]) => (config: Config): Config => ({
  ...config,
  generations: { ...config.generations, providerAccounts: kinds.map((kind, index) => ({ kind, apiKey: `${kind}-key-${index}`, slots: 2 })) },
});

const replicate = { model: 'black-forest-labs/flux-kontext-pro', input: { prompt: 'a winter portrait', input_image: '{{photo}}' } };
const fal = { model: 'fal-ai/flux-pro/kontext', input: { prompt: 'a winter portrait', image_url: '{{photo}}' }, output: 'images[0].url' };

describe('an effect is offered only where a provider kind with an account runs it', function () {
  this.timeout(60_000);
  const apps: TestApp[] = [];
  let authorId: string;
  async function start(options: Parameters<typeof startTestApp>[0]) {
    const app = await startTestApp(options);
    apps.push(app);
    return { app, api: appClient(app) };
  }
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  beforeEach(async () => {
    await resetDatabase();
    await addCategory('portraits');
    await addTag('winter');
    authorId = await addAuthor({ name: 'Lena' });
    const winter = (en: string) => ({ ru: `Зимний ${en}`, en: `Winter ${en}` });
    const shared = { categories: ['portraits'], tags: ['winter'], authorId };
    await addEffect('on-simulator', { ...shared, name: winter('simulator'), position: 0 });
    await addEffect('on-replicate', { ...shared, name: winter('replicate'), position: 1, runs: { replicate } });
    await addEffect('on-fal-or-simulator', { ...shared, name: winter('fal'), position: 2, runs: { fal, simulator: { model: 'image' } } });
    await services().db('studio_categories').insert([
      { slug: 'edit-anywhere', name_ru: 'Правка', name_en: 'Edit', output_type: 'image', cost: 5, min_photos: 1, max_photos: 1, model: 'photo_edit', position: 0 },
      { slug: 'edit-on-fal', name_ru: 'Правка fal', name_en: 'Edit on fal', output_type: 'image', cost: 5, min_photos: 1, max_photos: 1, model: fal.model, runs: JSON.stringify({ fal }), position: 1 },
    ]);
  });

  /** What a phone sees of the catalog: lists, counts, search, author page, and which effects open. */
  async function seen(api: ReturnType<typeof appClient>) {
    const opens: string[] = [];
    for (const slug of ['on-simulator', 'on-replicate', 'on-fal-or-simulator']) {
      const answer = await api.get(`/v1/effects/${slug}`);
      expect([200, 404], answer.text).to.include(answer.status);
      if (answer.status === 200) opens.push(slug);
    }
    const user = await makeUser();
    return {
      list: slugsOf(await api.get('/v1/effects')),
      category: slugsOf(await api.get('/v1/effects?category=portraits')),
      tagged: slugsOf(await api.get('/v1/effects?tag=winter')),
      search: slugsOf(await api.get(`/v1/effects?search=${encodeURIComponent('winter')}&locale=en`)),
      counts: (await api.get('/v1/categories')).body.map((category: any) => category.effect_count),
      tags: (await api.get('/v1/tags')).body.map((tag: any) => tag.effect_count),
      author: (await api.get(`/v1/authors/${authorId}`)).body.effects?.items.map((effect: any) => effect.slug) ?? null,
      opens,
      studio: (await api.get('/v1/studio/categories', { token: user.token })).body.map((category: any) => category.slug),
    };
  }

  it('with the simulator\'s accounts only: an effect mapped only to replicate is in no list, search, count or page, and does not open', async () => {
    const { api } = await start({});
    expect(await seen(api)).to.deep.equal({
      list: ['on-simulator', 'on-fal-or-simulator'],
      category: ['on-simulator', 'on-fal-or-simulator'],
      tagged: ['on-simulator', 'on-fal-or-simulator'],
      search: ['on-simulator', 'on-fal-or-simulator'],
      counts: [2],
      tags: [2],
      author: ['on-simulator', 'on-fal-or-simulator'],
      opens: ['on-simulator', 'on-fal-or-simulator'],
      studio: ['edit-anywhere'],
    });
  });

  it('with replicate accounts only: the replicate effect shows everywhere, the simulator\'s and fal\'s do not', async () => {
    const { api } = await start({ adjustConfig: withAccounts('replicate') });
    expect(await seen(api)).to.deep.equal({
      list: ['on-replicate'], category: ['on-replicate'], tagged: ['on-replicate'], search: ['on-replicate'],
      counts: [1], tags: [1], author: ['on-replicate'], opens: ['on-replicate'], studio: [],
    });
  });

  it('with fal and replicate accounts every effect mapped to either shows; an author with none offered has no page', async () => {
    const both = await start({ adjustConfig: withAccounts('fal', 'replicate') });
    expect((await seen(both.api))).to.deep.include({ list: ['on-replicate', 'on-fal-or-simulator'], studio: ['edit-on-fal'] });
    await services().db('effects').whereIn('slug', ['on-replicate', 'on-fal-or-simulator']).update({ runs: null });
    expect((await both.api.get(`/v1/authors/${authorId}`)).status).to.equal(404);
  });

  it('a kind with accounts that PROVIDER_KIND_ORDER leaves out offers nothing', async () => {
    const { api } = await start({ config: { PROVIDER_KIND_ORDER: 'fal,simulator' }, adjustConfig: withAccounts('replicate', 'simulator') });
    expect(slugsOf(await api.get('/v1/effects'))).to.deep.equal(['on-simulator', 'on-fal-or-simulator']);
  });

  it('says at start which effects and studio categories are off, and why', async () => {
    const logged = capturingLogger();
    await start({ log: logged.log, config: { PROVIDER_KIND_ORDER: 'replicate,simulator' }, adjustConfig: withAccounts('replicate', 'fal') });
    const lines = logged.lines().filter((line) => /^(effect|studio category) /.test(String(line.msg)));
    expect(lines.map((line) => [line.level, line.msg])).to.deep.equal([
      [40, 'effect on-fal-or-simulator: no account for simulator; fal not in PROVIDER_KIND_ORDER'],
      [40, 'effect on-simulator: no account for simulator'],
      [40, 'studio category edit-anywhere: no account for simulator'],
      [40, 'studio category edit-on-fal: fal not in PROVIDER_KIND_ORDER'],
    ]);
    expect(lines[0]).to.include({ effect: 'on-fal-or-simulator' });
  });
});
