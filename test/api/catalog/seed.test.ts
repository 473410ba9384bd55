import { expect } from 'chai';
import { demoAuthorId, seedDemoCatalog, seedDemoCatalogIfEmpty } from '../../../services/catalog/demo-catalog';
import { findLaunchableEffect } from '../../../db/catalog/launchable';
import { client } from '../../client';
import { resetDatabase, services, silentLogger, startTestApp, type TestApp } from '../../harness';

const counts = async () => {
  const { db } = services();
  const count = async (table: string) => (await db(table).count<{ count: number }[]>('* as count'))[0].count;
  return {
    effects: await count('effects'), categories: await count('categories'), tags: await count('tags'), authors: await count('authors'),
    effectCategories: await count('effect_categories'), effectTags: await count('effect_tags'),
  };
};

/** the README's demo catalog, row by row. */
const demoTable = [
  ['winter-portrait', [[1, 1]], 10, 'image', ['portraits'], 'image'],
  ['multi-angle-hero', [[1, 4]], 15, 'image', ['portraits'], 'image'],
  ['royal-couple', [[1, 1], [1, 1]], 20, 'image', ['portraits', 'fun'], 'image'],
  ['twin-studio', [[2, 2], [2, 2]], 20, 'image', ['fun'], 'image'],
  ['family-trio', [[1, 3], [1, 3], [0, 2]], 30, 'image', ['fun'], 'image'],
  ['dance-video', [[1, 1]], 40, 'video', ['video'], 'video'],
  ['community-sticker', [[1, 1]], 5, 'image', ['fun'], 'sticker'],
  ['golden-masterpiece', [[1, 1]], 1000, 'image', ['portraits'], 'image'],
  ['archive-classic', [[1, 1]], 10, 'image', ['archive'], 'image'],
  ['direct-only', [[1, 1]], 10, 'image', [], 'image'],
  ['qa-safety', [[1, 1]], 10, 'image', ['archive'], 'safety'],
  ['qa-provider-error', [[1, 1]], 10, 'image', ['archive'], 'error'],
] as const;

describe('demo catalog seed', function () {
  this.timeout(60_000);
  let app: TestApp;
  let api: ReturnType<typeof client>;

  before(async () => {
    app = await startTestApp();
    api = client(app.url);
    await resetDatabase();
    await seedDemoCatalog(services().db, services().storage);
  });
  after(() => app.close());

  it('has every effect of the demo catalog (README) with its people, cost, output, categories and model', async () => {
    const { db } = services();
    const categorySlugs = new Map((await db('categories').select('id', 'slug')).map((row) => [row.id, row.slug]));
    for (const [slug, characters, cost, output, categories, model] of demoTable) {
      const effect = (await api.get(`/v1/effects/${slug}?locale=en`)).body;
      expect(effect.characters.map((character: any) => [character.min_photos, character.max_photos]), slug).to.deep.equal(characters);
      expect([effect.cost, effect.output_type], slug).to.deep.equal([cost, output]);
      expect(effect.category_ids.map((id: string) => categorySlugs.get(id)), slug).to.have.members([...categories]);
      expect((await findLaunchableEffect(db, slug))!.model, slug).to.equal(model);
      expect(effect.name, slug).to.be.a('string').and.not.equal('');
      expect((await api.get(`/v1/effects/${slug}`)).body.name, slug).not.to.equal(effect.name);
    }
  });

  it('enables portraits, fun and video in that order and disables archive', async () => {
    const categories = (await api.get('/v1/categories?locale=en')).body;
    expect(categories.map((category: any) => [category.slug, category.name])).to.deep.equal([['portraits', 'Portraits'], ['fun', 'Fun'], ['video', 'Video']]);
    expect(slugsIn((await api.get('/v1/effects?limit=100')).body)).to.have.members([
      'winter-portrait', 'multi-angle-hero', 'royal-couple', 'twin-studio', 'family-trio', 'dance-video', 'community-sticker', 'golden-masterpiece',
    ]);
  });

  it('builds real previews, a clip for dance-video, and names the community author', async () => {
    const dance = (await api.get('/v1/effects/dance-video')).body;
    expect(dance.preview.video).to.equal(dance.preview_video_url).and.to.match(/\.mp4$/);
    expect(dance.preview_animation_url).to.match(/\.webp$/);
    expect((await fetch(dance.preview.thumb)).status).to.equal(200);
    const sticker = (await api.get('/v1/effects/community-sticker')).body;
    expect(sticker).to.include({ author_id: demoAuthorId, author_name: 'Mira Sticker Lab' });
    expect(sticker.preview).to.include({ video: null, animation: null });
    const author = (await api.get(`/v1/authors/${demoAuthorId}`)).body;
    expect(slugsIn(author.effects)).to.deep.equal(['community-sticker']);
    expect((await fetch(author.avatar_url)).status).to.equal(200);
  });

  it('has tags on its effects', async () => {
    const tags = (await api.get('/v1/tags')).body;
    expect(tags[0]).to.deep.equal({ slug: 'portrait', name: 'портрет', effect_count: 3 });
    expect(tags.map((tag: any) => tag.slug)).not.to.include.members(['test', 'retro']);
  });

  it('creates nothing new when seeded again, and rebuilds no preview', async () => {
    const before = await counts();
    const summary = await seedDemoCatalog(services().db, services().storage);
    expect(summary).to.include({ effectsCreated: 0, effectsUpdated: 12, previewsBuilt: 0 });
    expect(await counts()).to.deep.equal(before);
    expect(before).to.deep.include({ effects: 12, categories: 4, authors: 1 });
  });

  it('seeds on start only into an empty catalog, once when two processes start together', async () => {
    const { db, storage } = services();
    expect(await seedDemoCatalogIfEmpty(db, storage, silentLogger())).to.equal(false);
    await resetDatabase();
    const results = await Promise.all([seedDemoCatalogIfEmpty(db, storage, silentLogger()), seedDemoCatalogIfEmpty(db, storage, silentLogger())]);
    expect(results.sort()).to.deep.equal([false, true]);
    expect(await counts()).to.deep.include({ effects: 12, categories: 4 });
  });
});

function slugsIn(list: { items: { slug: string }[] }): string[] {
  return list.items.map((item) => item.slug);
}
