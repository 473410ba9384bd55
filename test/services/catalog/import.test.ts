import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { CatalogImportError, type CatalogDocument, type EffectRow, type ImportProgress } from '../../../services/catalog/import';
import { demoCatalog } from '../../../services/catalog/demo-catalog';
import { demoStudioCategories } from '../../../db/studio/seed-studio-categories';
import type { StudioCategoryRow } from '../../../db/studio/write-studio-categories';
import { demoClip, demoPoster } from '../../../media/demo-assets';
import { CatalogFileError, importCatalogFile } from '../../../scripts/import-catalog';
import { client } from '../../client';
import { appClient, resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { slugsOf } from '../../api/catalog/fixtures';
import { loggingServiceEnv, runScript, stderrLines } from '../../scripts/run-script';

const goodCatalog: CatalogDocument = {
  categories: [
    { slug: 'portraits', name: { ru: 'Портреты', en: 'Portraits' }, icon: '🖼️' },
    { slug: 'fun', name: { ru: 'Весёлое', en: 'Fun' } },
  ],
  tags: [{ slug: 'winter', name: { ru: 'зима', en: 'winter' } }],
  authors: [{ id: '0b9f7a52-1c3e-4d5f-8a6b-7c8d9e0f1a2b', name: 'Lena', avatar: 'media/avatar.jpg' }],
  effects: [
    {
      slug: 'winter-portrait', name: { ru: 'Зимний портрет', en: 'Winter portrait' }, description: { ru: 'Снег', en: 'Snow' },
      cost: 10, characters: [{ min_photos: 1, max_photos: 1 }], model: 'image',
      categories: ['portraits', { slug: 'fun', pinned_top: 1 }], tags: ['winter'], poster: 'media/winter.jpg', focus: { x: 0.5, y: 0.3 },
    },
    {
      slug: 'community', name: { ru: 'Стикер', en: 'Sticker' },
      cost: 5, characters: [{ min_photos: 1, max_photos: 1 }], model: 'sticker',
      categories: ['fun'], author: '0b9f7a52-1c3e-4d5f-8a6b-7c8d9e0f1a2b', poster: 'media/sticker.jpg',
    },
  ],
};

describe('catalog import', function () {
  this.timeout(60_000);
  let app: TestApp;
  let api: ReturnType<typeof client>;
  let folder: string;

  before(async () => {
    app = await startTestApp();
    api = appClient(app);
    folder = mkdtempSync(path.join(os.tmpdir(), 'catalog-import-'));
    const media = path.join(folder, 'media');
    rmSync(media, { recursive: true, force: true });
    await import('node:fs/promises').then((fs) => fs.mkdir(media));
    for (const name of ['winter', 'sticker', 'avatar']) writeFileSync(path.join(media, `${name}.jpg`), await demoPoster(name, { width: 600, height: 800 }));
    writeFileSync(path.join(media, 'broken.jpg'), 'not an image');
  });
  after(async () => {
    await app.close();
    rmSync(folder, { recursive: true, force: true });
  });
  beforeEach(() => resetDatabase());

  const write = (name: string, content: string) => {
    const file = path.join(folder, name);
    writeFileSync(file, content);
    return file;
  };

  it('imports a YAML file: categories, tags, author, effects with previews, pins and focus', async () => {
    const progress: ImportProgress[] = [];
    const summary = await importCatalogFile(services(), write('catalog.yaml', toYaml(goodCatalog)), (event) => progress.push(event));
    expect(summary).to.deep.equal({ categories: 2, tags: 1, authors: 1, effectsCreated: 2, effectsUpdated: 0, previewsBuilt: 2, studioCategories: 0 });
    expect((await api.get('/v1/categories')).body.map((category: any) => [category.slug, category.effect_count])).to.deep.equal([['portraits', 1], ['fun', 2]]);
    expect(slugsOf(await api.get('/v1/effects?category=fun'))).to.deep.equal(['winter-portrait', 'community']);
    const winter = (await api.get('/v1/effects/winter-portrait?locale=en')).body;
    expect(winter).to.include({ name: 'Winter portrait', description: 'Snow', cost: 10 });
    expect(winter.tags).to.deep.equal(['winter']);
    expect(winter.preview).to.include({ width: 600, height: 800 });
    expect(winter.preview.focus).to.deep.equal({ x: 0.5, y: 0.3 });
    expect((await api.get('/v1/effects/community')).body.author_name).to.equal('Lena');
    expect(progress.map((event) => event.stage)).to.include.members(['check', 'previews', 'write']);
    expect(progress.at(-1)).to.include({ stage: 'write', done: 1, total: 1 });
  });

  it("imports the operator's manual's example file as written", async () => {
    const manual = readFileSync(path.resolve(__dirname, '../../../../docs/operations.md'), 'utf8');
    const example = /## Importing a catalog[\s\S]*?```yaml\n([\s\S]*?)```/.exec(manual)![1];
    const media = path.join(folder, 'media');
    writeFileSync(path.join(media, 'anna.png'), await sharp(await demoPoster('anna', { width: 200, height: 200 })).png().toBuffer());
    writeFileSync(path.join(media, 'winter.mp4'), await demoClip({ seconds: 1, width: 320, height: 240 }));
    const summary = await importCatalogFile(services(), write('readme-example.yaml', example));
    expect(summary).to.include({ categories: 2, tags: 1, authors: 1, effectsCreated: 1 });
    const effect = (await api.get('/v1/effects/winter-portrait?locale=en')).body;
    expect(effect).to.include({ name: 'Winter portrait', cost: 10, author_name: 'Anna K.' });
    expect(effect.preview.video).to.be.a('string');
    expect(effect.preview.focus).to.deep.equal({ x: 0.5, y: 0.3 });
  });

  it('imports docs/catalog-real-providers.yaml as written: every demo effect and studio category, each on Replicate and fal', async () => {
    const example = readFileSync(path.resolve(__dirname, '../../../../docs/catalog-real-providers.yaml'), 'utf8');
    const media = path.join(folder, 'media');
    for (const effect of demoCatalog.effects!) writeFileSync(path.join(media, `${effect.slug}.jpg`), await demoPoster(effect.slug, { width: 600, height: 800 }));
    writeFileSync(path.join(media, 'dance-video.mp4'), await demoClip({ seconds: 1, width: 320, height: 480 }));
    writeFileSync(path.join(media, 'author.jpg'), await demoPoster('author', { width: 256, height: 256 }));
    const summary = await importCatalogFile(services(), write('catalog-real-providers.yaml', example));
    expect(summary).to.include({ effectsCreated: demoCatalog.effects!.length, studioCategories: demoStudioCategories.length });

    // The same effects as the demo: names, people, costs, outputs, categories, tags, author.
    const document = parseYaml(example) as CatalogDocument;
    const shape = (effect: EffectRow) => ({
      slug: effect.slug, name: effect.name, description: effect.description, cost: effect.cost, characters: effect.characters, output_type: effect.output_type, categories: effect.categories, tags: effect.tags, author: effect.author,
    });
    expect(document.effects!.map(shape)).to.deep.equal(demoCatalog.effects!.map(shape));
    const task = ({ slug, name, description, cost, min_photos, max_photos, output_type }: StudioCategoryRow) => ({ slug, name, description, cost, min_photos, max_photos, output_type });
    expect(document.studio_categories!.map(task)).to.deep.equal(demoStudioCategories.map(task));
    // Each on both real providers, but the QA effects, which only the simulator fails on purpose.
    const kinds = async (table: string) => (await services().db(table).orderBy('slug').select('slug', 'runs'))
      .map((row) => [row.slug, row.runs ? Object.keys(row.runs).sort() : null]);
    const both = ['fal', 'replicate'];
    expect(await kinds('effects')).to.deep.equal(demoCatalog.effects!.map((effect) => effect.slug).sort()
      .map((slug) => [slug, slug.startsWith('qa-') ? null : both]));
    expect(await kinds('studio_categories')).to.deep.equal(demoStudioCategories.map((category) => category.slug).sort().map((slug) => [slug, both]));
  });

  it('updates by slug on a second run: no duplicates, unchanged posters not rebuilt', async () => {
    const file = write('catalog.json', JSON.stringify(goodCatalog));
    await importCatalogFile(services(), file);
    const before = (await api.get('/v1/effects/winter-portrait')).body;
    const changed = structuredClone(goodCatalog);
    changed.effects![0].name.ru = 'Зимний портрет 2';
    changed.effects![0].categories = ['portraits'];
    const summary = await importCatalogFile(services(), write('catalog.json', JSON.stringify(changed)));
    expect(summary).to.include({ effectsCreated: 0, effectsUpdated: 2, previewsBuilt: 0 });
    const after = (await api.get('/v1/effects/winter-portrait')).body;
    expect(after).to.include({ id: before.id, name: 'Зимний портрет 2', preview_url: before.preview_url });
    expect(after.category_ids).to.have.length(1);
    expect(await services().db('effects').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 2 }]);
  });

  it('rejects a file with bad rows, naming each, and writes nothing', async () => {
    const bad = structuredClone(goodCatalog) as any;
    bad.effects[0].cost = 'ten';
    bad.effects[1].categories = ['nowhere'];
    bad.effects[1].characters = [{ min_photos: 0, max_photos: 1 }];
    bad.effects.push({ ...bad.effects[1], slug: 'broken-poster', categories: ['fun'], characters: [{ min_photos: 1, max_photos: 1 }], poster: 'media/broken.jpg' });
    bad.effects.push({ ...bad.effects[1], slug: 'missing-poster', categories: ['fun'], characters: [{ min_photos: 1, max_photos: 1 }], poster: 'media/none.jpg' });
    let error: unknown;
    try {
      await importCatalogFile(services(), write('bad.yaml', toYaml(bad)));
    } catch (thrown) {
      error = thrown;
    }
    expect(error).to.be.instanceOf(CatalogImportError);
    const problems = (error as CatalogImportError).problems;
    expect(problems.map((problem) => problem.row)).to.include.members(['effects[0] (winter-portrait)', 'effects[1] (community)', 'effects[2] (broken-poster)', 'effects[3] (missing-poster)']);
    expect(problems.find((problem) => problem.row.startsWith('effects[0]'))!.message).to.contain('cost');
    expect(problems.filter((problem) => problem.row.startsWith('effects[1]')).map((problem) => problem.message).join('\n'))
      .to.contain('category nowhere').and.to.contain('first person');
    expect(problems.find((problem) => problem.row.startsWith('effects[3]'))!.message).to.contain('none.jpg');
    expect(await services().db('categories').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    expect(await services().db('effects').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
  });

  it('imports what runs each effect: runs per provider kind as given, model beside them as the simulator route, model alone as before', async () => {
    const document = structuredClone(goodCatalog);
    const replicate = { model: 'black-forest-labs/flux-kontext-pro', input: { prompt: 'a winter portrait', input_image: '{{photo}}', aspect_ratio: 'match_input_image' } };
    const fal = { model: 'fal-ai/flux-pro/kontext', input: { prompt: 'a winter portrait', image_url: '{{person.1.photo}}' }, output: 'images[0].url' };
    document.effects![0].runs = { replicate, fal };
    delete document.effects![1].model;
    document.effects![1].runs = { fal };
    await importCatalogFile(services(), write('runs.yaml', toYaml(document)));
    const rows = await services().db('effects').orderBy('slug').select('slug', 'model', 'runs');
    expect(rows).to.deep.equal([
      { slug: 'community', model: 'fal-ai/flux-pro/kontext', runs: { fal } },
      { slug: 'winter-portrait', model: 'image', runs: { simulator: { model: 'image' }, replicate, fal } },
    ]);
    // The file is the truth for its rows: routes left out are gone.
    await importCatalogFile(services(), write('runs.yaml', toYaml(goodCatalog)));
    expect(await services().db('effects').orderBy('slug').select('slug', 'model', 'runs')).to.deep.equal([
      { slug: 'community', model: 'sticker', runs: null },
      { slug: 'winter-portrait', model: 'image', runs: null },
    ]);
  });

  it('refuses routes it could not run, one row error each, and writes nothing', async () => {
    const bad = structuredClone(goodCatalog) as any;
    const photo = { image_url: '{{photo}}' };
    bad.effects[0].runs = {
      replicate: { model: 'flux-kontext-pro', input: { input_image: '{{photo}}' } },
      fal: { model: 'fal-ai/flux-pro/kontext', input: { ...photo, prompt: 'with {{person.2.photo}} and {{style}}' }, output: 'images..url' },
      openai: { model: 'gpt-image-1' },
    };
    bad.effects[1].runs = { simulator: { model: 'sticker' }, fal: { model: 'fal-ai/bria/background/remove' } };
    bad.effects.push({ ...goodCatalog.effects![1], slug: 'no-model', model: undefined });
    bad.effects.push({ ...goodCatalog.effects![1], slug: 'no-photo', model: undefined, runs: { replicate: { model: 'google/nano-banana', input: { prompt: 'a sticker' } } } });
    let error: unknown;
    await importCatalogFile(services(), write('bad-runs.yaml', toYaml(bad))).catch((thrown) => { error = thrown; });
    expect(error).to.be.instanceOf(CatalogImportError);
    const said = (error as CatalogImportError).problems.map((problem) => `${problem.row}: ${problem.message}`);
    expect(said).to.include.members([
      'effects[0] (winter-portrait): runs.openai is not a provider kind (simulator, replicate, fal)',
      'effects[0] (winter-portrait): runs.replicate.model must be owner/name (an official model) or a 64-character version id',
      'effects[0] (winter-portrait): runs.fal.output must be a path of fields and list indexes such as images[0].url or [0], or empty for the output itself',
      'effects[0] (winter-portrait): runs.fal.input names person 2, but the task has 1',
      "effects[1] (community): model and runs.simulator both name the simulator's model: keep one",
      'effects[2] (no-model): model or runs is required: what runs it (a simulator model, or a route per provider kind)',
      'effects[3] (no-photo): runs.replicate.input places no photo: put {{photo}}, {{photos}} or {{person.P.photo}} where the model takes its image',
    ]);
    expect(said.find((line) => line.includes('{{style}}'))).to.match(/^effects\[0\] \(winter-portrait\): runs\.fal\.input names \{\{style\}\}, which mean nothing/);
    expect(await services().db('effects').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
  });

  it('imports studio categories with their runs, by slug; the demo ones pass the same checks', async () => {
    const photoEdit = {
      slug: 'photo-edit', name: { ru: 'Правка фото', en: 'Photo edit' }, output_type: 'image' as const, cost: 12, min_photos: 1, max_photos: 4,
      runs: { fal: { model: 'fal-ai/nano-banana/edit', input: { prompt: '{{prompt}}', image_urls: '{{photos}}' }, output: 'images[0].url' } },
    };
    expect((await importCatalogFile(services(), write('studio.yaml', toYaml({ studio_categories: [...demoStudioCategories, { ...photoEdit, slug: 'photo-edit-fal' }] })))).studioCategories).to.equal(4);
    await importCatalogFile(services(), write('studio.yaml', toYaml({ studio_categories: [{ ...photoEdit, cost: 15 }] })));
    const rows = await services().db('studio_categories').orderBy('position').select('slug', 'cost', 'model', 'runs', 'position');
    expect(rows.map((row) => row.slug)).to.deep.equal(['text-to-image', 'photo-edit', 'ask-stylist', 'photo-edit-fal']);
    expect(rows[1]).to.deep.include({ cost: 15, model: 'fal-ai/nano-banana/edit', runs: photoEdit.runs, position: 1 });
    expect(rows[0]).to.deep.include({ model: 'text_to_image', runs: null });
    const bad = { ...photoEdit, min_photos: 3, max_photos: 2, runs: { fal: { ...photoEdit.runs.fal, input: { prompt: '{{prompt}}' } } } };
    let error: unknown;
    await importCatalogFile(services(), write('bad-studio.yaml', toYaml({ studio_categories: [bad] }))).catch((thrown) => { error = thrown; });
    expect((error as CatalogImportError).problems.map((problem) => `${problem.row}: ${problem.message}`)).to.deep.equal([
      'studio_categories[0] (photo-edit): min_photos is above max_photos',
      'studio_categories[0] (photo-edit): runs.fal.input places no photo: put {{photo}}, {{photos}} or {{person.P.photo}} where the model takes its image',
    ]);
  });

  it('rejects a file that is not valid YAML or JSON', async () => {
    for (const [name, content] of [['broken.yaml', 'effects: [unclosed'], ['broken.json', '{"effects": ']]) {
      let error: unknown;
      await importCatalogFile(services(), write(name, content)).catch((thrown) => { error = thrown; });
      expect(error, name).to.be.instanceOf(CatalogFileError);
    }
  });

  describe('as a script (npm run import-catalog)', () => {
    const progressLine = /^(checking|previews|writing) +\[[#.]+\] \d+\/\d+/;

    it('writes the summary alone on stdout; progress and the logs of what it starts on stderr', async () => {
      const good = await runScript('import-catalog', [write('catalog.yaml', toYaml(goodCatalog))], loggingServiceEnv());
      expect(good.status, good.stderr).to.equal(0);
      expect(good.stdout).to.equal('imported: 2 effects created, 0 updated, 2 previews built, 2 categories, 1 tag, 1 author, 0 studio categories\n');
      const { logs, other } = stderrLines(good.stderr);
      expect(other.filter((line) => !progressLine.test(line))).to.deep.equal([]);
      expect(other.join('\n')).to.match(/previews +\[#+\] 2\/2/);
      expect(logs).not.to.deep.equal([]);
    });

    it('a refused import exits 1: nothing on stdout, the refusal and one line per problem on stderr, no stack trace', async () => {
      const bad = structuredClone(goodCatalog);
      bad.effects![0].cost = -1;
      const failed = await runScript('import-catalog', [write('bad.yaml', toYaml(bad))], loggingServiceEnv());
      expect(failed.status).to.equal(1);
      expect(failed.stdout).to.equal('');
      expect(stderrLines(failed.stderr).other.filter((line) => !progressLine.test(line))).to.deep.equal([
        'import-catalog: the catalog was not imported: 1 problem',
        '  effects[0] (winter-portrait): cost must be >= 0',
      ]);
    });

    it('a missing, unreadable or unparsable file, or no file named, is one line on stderr before anything starts', async () => {
      const missing = path.join(folder, 'none.yaml');
      const cases: [string[], number, RegExp][] = [
        [[missing], 1, new RegExp(`^import-catalog: cannot read ${missing}: ENOENT`)],
        [[write('broken.yaml', 'effects: [unclosed')], 1, /^import-catalog: \S+broken\.yaml is not valid YAML: .+ at line 1, column \d+$/],
        [[write('broken.json', '{"effects": ')], 1, /^import-catalog: \S+broken\.json is not valid JSON: /],
        [[], 2, /^import-catalog: name one catalog file: npm run import-catalog -- <catalog\.json\|catalog\.yaml>$/],
      ];
      for (const [args, status, line] of cases) {
        const answer = await runScript('import-catalog', args, loggingServiceEnv());
        expect(answer.status, args.join(' ')).to.equal(status);
        expect(answer.stdout, args.join(' ')).to.equal('');
        expect(answer.stderr.split('\n'), args.join(' ')).to.have.length(2).and.to.have.property('1', '');
        expect(answer.stderr.split('\n')[0], args.join(' ')).to.match(line);
      }
    });
  });
});
