import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { startService, type ServiceProcess } from '../../../scripts/bench-processes';
import { client, type Api } from '../../client';
import { CatalogCache } from '../../../api/catalog/catalog-cache';
import { notify } from '../../../db/channels';
import { loadEffects, publicUrlOf } from '../../../api/catalog/effect-view';
import { resetDatabase, serviceEnv, services, silentLogger, startTestApp, testConfig, type TestApp } from '../../harness';
import { makeUser } from '../../users';
import { addAuthor, addCategory, addEffect, addTag, slugsOf } from './fixtures';

/** The catalog version announced so far (the sequence the triggers take from). */
async function catalogVersion(): Promise<number> {
  const { rows } = await services().db.raw<{ rows: { last_value: string; is_called: boolean }[] }>('select last_value, is_called from catalog_version');
  return rows[0].is_called ? Number(rows[0].last_value) : 0;
}

/** Polls `probe` until `accept`, returning how long that took; fails after `limitMs`. */
async function msUntil<T>(probe: () => Promise<T>, accept: (value: T) => boolean, limitMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (accept(value)) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`not fresh after ${limitMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('catalog cache', function () {
  this.timeout(60_000);

  describe('the catalog version', () => {
    beforeEach(() => resetDatabase());

    it('is bumped once per transaction that changes the catalog, never by counting a success', async () => {
      const { db } = services();
      await addCategory('portraits');
      const effectId = await addEffect('a', { categories: ['portraits'] });
      const before = await catalogVersion();
      await db.transaction(async (trx) => {
        await trx('effects').where({ id: effectId }).update({ name_en: 'Renamed' });
        await trx('categories').where({ slug: 'portraits' }).update({ icon: '*' });
      });
      expect(await catalogVersion()).to.equal(before + 1);
      await db.raw('update effects set success_count = success_count + 1, updated_at = now() where id = ?', [effectId]);
      expect(await catalogVersion()).to.equal(before + 1);
      await db('effects').where({ id: effectId }).update({ cost: 11 });
      await db('tags').insert({ slug: 'retro', name_ru: 'ретро', name_en: 'retro' });
      await db('authors').insert({ name: 'A' });
      expect(await catalogVersion()).to.equal(before + 4);
      await db.raw('truncate effect_tags cascade');
      expect(await catalogVersion()).to.equal(before + 5);
    });
  });

  describe('what it keeps', () => {
    let cache: CatalogCache;
    beforeEach(async () => {
      // A budget of about three answers of 1 KB (each counts three times its bytes).
      cache = new CatalogCache(services().listenHub, { ...testConfig().catalog, cacheBytes: 10_000 }, silentLogger());
      await cache.start();
    });
    afterEach(() => cache.stop());

    it('keeps a search-like answer from its second ask only, so a stream of one-off answers never pushes out the rest', async () => {
      let listComputed = 0;
      const list = () => cache.answer('list', async () => {
        listComputed += 1;
        return { items: 'x'.repeat(1000) };
      });
      await list();
      await list();
      expect(listComputed).to.equal(1);
      // Twenty one-off answers of the same size: kept, they would have pushed the list out six times over.
      for (let index = 0; index < 20; index += 1) {
        await cache.answer(`search ${index}`, async () => ({ items: 'y'.repeat(1000) }), { keepWhenAskedAgain: true });
      }
      await list();
      expect(listComputed).to.equal(1);

      let repeatedComputed = 0;
      const repeated = () => cache.answer('search again', async () => {
        repeatedComputed += 1;
        return { items: 'z' };
      }, { keepWhenAskedAgain: true });
      for (let ask = 0; ask < 4; ask += 1) await repeated();
      // Computed at its first ask (handed out, not kept) and at its second (kept from then on).
      expect(repeatedComputed).to.equal(2);
    });

    it('lets answers give way to what they are made of: answers asked twice never push out a part, parts push out answers', async () => {
      let partComputed = 0;
      const part = () => cache.remember('part', () => 3000, async () => {
        partComputed += 1;
        return 'view';
      });
      await part();
      // Twenty searches asked twice (kept), each as big as the part: they push out each other only.
      for (let index = 0; index < 20; index += 1) {
        const search = () => cache.answer(`search ${index}`, async () => ({ items: 'y'.repeat(1000) }), { keepWhenAskedAgain: true });
        await search();
        await search();
      }
      await part();
      expect(partComputed).to.equal(1);

      let listComputed = 0;
      const list = () => cache.answer('list', async () => {
        listComputed += 1;
        return { items: 'x'.repeat(1000) };
      });
      await list();
      await list();
      expect(listComputed).to.equal(1);
      // Two more parts fill the budget: the answer goes, not the part read longest ago.
      await cache.remember('part 2', () => 3000, async () => 'list ids');
      await cache.remember('part 3', () => 3000, async () => 'search index');
      await list();
      await part();
      expect(listComputed).to.equal(2);
      expect(partComputed).to.equal(1);
    });

    it('evicts the answer read longest ago when over its budget, an answer read since staying', async () => {
      const computed: string[] = [];
      const ask = (key: string) => cache.answer(key, async () => {
        computed.push(key);
        return { items: key.repeat(1000) };
      });
      await ask('a');
      await ask('b');
      await ask('c');
      await ask('a');
      // Over budget with d: b, read longest ago, goes; a was read after it.
      await ask('d');
      computed.length = 0;
      await ask('a');
      await ask('b');
      expect(computed).to.deep.equal(['b']);
    });
  });

  describe('how long it keeps', () => {
    const ttlMs = 1000;
    let cache: CatalogCache;
    beforeEach(async () => {
      await resetDatabase();
      cache = new CatalogCache(services().listenHub, { ...testConfig().catalog, cacheTtlMs: ttlMs }, silentLogger());
      await cache.start();
    });
    afterEach(() => cache.stop());

    it('keeps a part that neither time nor popularity changes past the time limit, until the catalog changes', async () => {
      const computed: string[] = [];
      const part = (key: string, untilChanged: boolean) => cache.remember(key, () => 100, async () => {
        computed.push(key);
        return key;
      }, undefined, { untilChanged });
      await part('view', true);
      await part('category order', false);
      await new Promise((resolve) => setTimeout(resolve, ttlMs + 100));
      await part('view', true);
      await part('category order', false);
      expect(computed).to.deep.equal(['view', 'category order', 'category order']);

      await addTag('retro');
      await cache.settled((payload) => services().db.transaction((trx) => notify(trx, 'catalog_changed', payload)));
      await part('view', true);
      expect(computed).to.deep.equal(['view', 'category order', 'category order', 'view']);
    });
  });

  describe('effect views', () => {
    beforeEach(() => resetDatabase());

    it('reads the views that pages asked for at the same moment miss in one statement, each page with its own', async () => {
      const { db, storage } = services();
      const cache = new CatalogCache(services().listenHub, testConfig().catalog, silentLogger());
      await cache.start();
      await addCategory('portraits');
      const ids = [await addEffect('a', { categories: ['portraits'] }), await addEffect('b', { categories: ['portraits'] }), await addEffect('c')];
      // The fixtures' own announcements would empty the cache midway.
      await cache.settled((payload) => db.transaction((trx) => notify(trx, 'catalog_changed', payload)));
      let viewReads = 0;
      const listen = (query: { sql: string }) => {
        if (query.sql.includes('left join authors')) viewReads += 1;
      };
      db.on('query', listen);
      try {
        const pages = await Promise.all([[ids[0]], [ids[1], ids[2]], [ids[2], ids[0]]].map((page) => loadEffects(db, publicUrlOf(storage), page, 'en', cache)));
        expect(pages.map((views) => views.map((view) => view.slug))).to.deep.equal([['a'], ['b', 'c'], ['c', 'a']]);
        expect(viewReads).to.equal(1);
        // Another moment, another statement; what is kept is not read again.
        const again = await Promise.all([[ids[0]], [ids[1]]].map((page) => loadEffects(db, publicUrlOf(storage), page, 'ru', cache)));
        expect(again.map((views) => views[0].name)).to.deep.equal(['Эффект a', 'Эффект b']);
        await loadEffects(db, publicUrlOf(storage), ids, 'en', cache);
        expect(viewReads).to.equal(2);
      } finally {
        db.removeListener('query', listen);
        cache.stop();
      }
    });
  });

  describe('a second web process', () => {
    let second: ServiceProcess;
    let api: Api;
    // Long enough that a loaded machine reads twice within it, short enough to wait out.
    const ttlS = 5;

    before(async () => {
      // Another process, as in production: it hears the catalog change only through Postgres.
      second = await startService(['web'], serviceEnv({ LOG_LEVEL: 'warn', CATALOG_CACHE_TTL_S: String(ttlS) }));
      api = client(second.url);
    });
    after(() => second.stop());
    beforeEach(() => resetDatabase());

    it('reads a committed change of an effect, a category, a tag link and an author within a fraction of a second', async () => {
      const { db } = services();
      await addCategory('portraits');
      await addTag('retro');
      const authorId = await addAuthor({ name: 'Ann' });
      const effectId = await addEffect('a', { categories: ['portraits'], name: { ru: 'Старое', en: 'Old' }, authorId });
      const list = () => api.get('/v1/effects?locale=en');
      // Warm: the same answer twice from the cache.
      const warm = await list();
      expect(warm.body.items[0].name).to.equal('Old');
      expect((await list()).headers.get('etag')).to.equal(warm.headers.get('etag'));

      const delays: number[] = [];
      await db('effects').where({ id: effectId }).update({ name_en: 'New' });
      delays.push(await msUntil(list, (answer) => answer.body.items[0]?.name === 'New', 2000));
      await db('authors').where({ id: authorId }).update({ name: 'Bob' });
      delays.push(await msUntil(list, (answer) => answer.body.items[0]?.author_name === 'Bob', 2000));
      await db('effect_tags').insert({ effect_id: effectId, tag_id: db('tags').where({ slug: 'retro' }).select('id') });
      delays.push(await msUntil(() => api.get('/v1/effects?tag=retro'), (answer) => answer.body.total === 1, 2000));
      await db('categories').where({ slug: 'portraits' }).update({ enabled: false });
      delays.push(await msUntil(list, (answer) => answer.body.total === 0, 2000));
      for (const delay of delays) expect(delay).to.be.below(500);
    });

    it('keeps a cached answer across success counts (they bump no version) until its time limit', async () => {
      await addCategory('portraits');
      const low = await addEffect('low', { categories: ['portraits'], successCount: 1, position: 2 });
      await addEffect('high', { categories: ['portraits'], successCount: 5, position: 1 });
      const page = () => api.get('/v1/effects?category=portraits');
      // The fixtures' own announcements must have reached the other process before it caches.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const cachedAt = Date.now();
      expect(slugsOf(await page())).to.deep.equal(['high', 'low']);
      await services().db.raw('update effects set success_count = 10 where id = ?', [low]);
      // Still the cached order: nothing announced a change.
      expect(slugsOf(await page())).to.deep.equal(['high', 'low']);
      expect(Date.now() - cachedAt, 'both reads within the time limit').to.be.below(ttlS * 1000);
      // CATALOG_CACHE_TTL_S bounds how long popularity lags.
      await msUntil(page, (answer) => slugsOf(answer)[0] === 'low', (ttlS + 2) * 1000);
      expect(Date.now() - cachedAt).to.be.below((ttlS + 2) * 1000);
    });

    it('corrects a typo to a word the catalog gained after the typo was searched, within a fraction of a second', async () => {
      await addCategory('portraits');
      await addEffect('summer', { categories: ['portraits'], name: { ru: 'Лето', en: 'Summer' } });
      const search = (text: string) => api.get(`/v1/effects?locale=en&search=${text}`);
      // Twice: the second answer comes from memory, with the typo's forms (no correction) kept.
      expect(slugsOf(await search('wintr'))).to.deep.equal([]);
      expect(slugsOf(await search('wintr'))).to.deep.equal([]);
      expect(slugsOf(await search('glaciar'))).to.deep.equal([]);

      const delays: number[] = [];
      await addEffect('winter', { categories: ['portraits'], name: { ru: 'Зима', en: 'Winter' } });
      delays.push(await msUntil(() => search('wintr'), (answer) => slugsOf(answer).includes('winter'), 2000));
      await services().db('effect_tags').insert({ effect_id: services().db('effects').where({ slug: 'summer' }).select('id'), tag_id: await addTag('glacier') });
      delays.push(await msUntil(() => search('glaciar'), (answer) => slugsOf(answer).includes('summer'), 2000));
      for (const delay of delays) expect(delay).to.be.below(500);
    });

    it('reorders a category when an effect stops being new, without any change announced', async () => {
      await addCategory('portraits');
      const days = 14;
      // New for two more seconds: in the new-effect slot ahead of the more popular effect.
      await addEffect('fresh', { categories: [{ slug: 'portraits', newSince: new Date(Date.now() - days * 86_400_000 + 2000) }], position: 2 });
      await addEffect('popular', { categories: ['portraits'], successCount: 5, position: 1 });
      const page = () => api.get('/v1/effects?category=portraits');
      expect(slugsOf(await page())).to.deep.equal(['fresh', 'popular']);
      const version = await catalogVersion();
      await msUntil(page, (answer) => slugsOf(answer)[0] === 'popular', 4000);
      expect(await catalogVersion()).to.equal(version);
    });
  });

  describe('validators and per-caller answers', () => {
    let app: TestApp;
    let api: Api;

    before(async () => {
      app = await startTestApp();
      api = client(app.url);
    });
    after(() => app.close());
    beforeEach(async () => {
      await resetDatabase();
      await addCategory('portraits');
      await addEffect('a', { categories: ['portraits'] });
      await app.catalogSettled();
    });

    const paths = ['/v1/effects', '/v1/effects?category=portraits', '/v1/effects?search=nothing', '/v1/effects/a', '/v1/categories', '/v1/tags'];

    for (const path of paths) {
      it(`answers ${path} with a strong ETag, public no-cache, and 304 without a body to a client that has it`, async () => {
        const first = await api.get(path);
        expect(first.status).to.equal(200);
        const etag = first.headers.get('etag')!;
        expect(etag).to.match(/^"[A-Za-z0-9_-]+"$/);
        expect(first.headers.get('cache-control')).to.equal('public, no-cache');
        expect(first.headers.get('content-type')).to.equal('application/json; charset=utf-8');

        const again = await api.get(path, { headers: { 'if-none-match': etag } });
        expect(again.status).to.equal(304);
        expect(again.text).to.equal('');
        expect(again.headers.get('etag')).to.equal(etag);
        expect(again.headers.get('cache-control')).to.equal('public, no-cache');
      });
    }

    /** Runs `body` with the keys the app's cache is asked for by a route (`answer`), as they are asked. */
    async function whileCountingRouted(body: (routed: string[]) => Promise<void>): Promise<void> {
      const routed: string[] = [];
      const answer = app.catalogCache.answer.bind(app.catalogCache);
      app.catalogCache.answer = ((key, compute, options) => {
        routed.push(key);
        return answer(key, compute, options);
      }) as typeof answer;
      try {
        await body(routed);
      } finally {
        app.catalogCache.answer = answer;
      }
    }

    it('answers an anonymous GET of a URL answered before from the kept answer, without the route, as the route would', async () => {
      const { db } = services();
      await whileCountingRouted(async (routed) => {
        const url = '/v1/effects?locale=en&limit=5';
        const first = await api.get(url);
        const again = await api.get(url);
        expect(routed).to.have.length(1);
        expect(again.status).to.equal(200);
        expect(again.text).to.equal(first.text);
        for (const header of ['etag', 'cache-control', 'content-type', 'content-length', 'vary']) expect(again.headers.get(header)).to.equal(first.headers.get(header));
        expect(again.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/).and.not.equal(first.headers.get('x-request-id'));
        const notModified = await api.get(url, { headers: { 'if-none-match': first.headers.get('etag')! } });
        expect(notModified.status).to.equal(304);
        expect(notModified.text).to.equal('');
        expect(notModified.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
        expect(routed).to.have.length(1);

        // With a token, another URL, a HEAD: the route, every time.
        const user = await makeUser();
        const signedIn = await api.get(url, { token: user.token });
        expect(signedIn.headers.get('cache-control')).to.equal('private, no-cache');
        expect((await api.get('/v1/effects?limit=5&locale=en')).text).to.equal(first.text);
        expect((await api.request('HEAD', url)).status).to.equal(200);
        expect(routed).to.have.length(4);

        // A change drops what it would replay.
        await db('effects').where({ slug: 'a' }).update({ name_en: 'Replayed no more' });
        await app.catalogSettled();
        expect((await api.get(url)).body.items[0].name).to.equal('Replayed no more');
        expect(routed).to.have.length(5);
      });
      await db('effects').where({ slug: 'a' }).update({ name_en: 'Effect a' });
    });

    it('replays no answer the route refuses or does not keep: a bad query, a 404, a search asked once', async () => {
      await whileCountingRouted(async (routed) => {
        for (let ask = 0; ask < 2; ask += 1) {
          const refused = await api.get('/v1/effects?limit=1000');
          expect(refused.status).to.equal(422);
          expect(refused.body.error.code).to.equal('validation_error');
        }
        for (let ask = 0; ask < 2; ask += 1) expect((await api.get('/v1/effects/missing')).status).to.equal(404);
        expect(routed).to.have.length(2);
        // A search's answer is kept from its second ask: the third is the first one replayed.
        const search = '/v1/effects?locale=en&search=effec';
        const answers = [await api.get(search), await api.get(search), await api.get(search)];
        for (const answer of answers) expect(answer.text).to.equal(answers[0].text);
        expect(routed).to.have.length(4);
      });
    });

    /** A GET as a client sends it, its answer's bytes as they came (not inflated, unlike `fetch`). */
    function asSent(path: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
      return new Promise((resolve, reject) => {
        http.get(`${app.url}${path}`, { headers }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
    }

    it('sends a kept answer of 1 KB or more gzipped to a client that accepts gzip, under its own ETag; either ETag revalidates', async () => {
      for (const slug of ['b', 'c', 'd', 'e', 'f', 'g']) await addEffect(slug, { categories: ['portraits'] });
      await app.catalogSettled();
      const gzip = { 'accept-encoding': 'gzip, deflate, br' };
      const plain = await asSent('/v1/effects', {});
      expect(plain.headers['content-encoding']).to.equal(undefined);
      expect(plain.headers.vary).to.equal('Accept-Encoding');
      expect(plain.body.length).to.be.at.least(1024);
      // The first ask for gzip goes as it is (an answer asked once is not worth compressing); the next
      // ones, replayed from the kept answer, gzipped.
      const first = await asSent('/v1/effects', gzip);
      expect(first.headers['content-encoding']).to.equal(undefined);
      expect(first.body.equals(plain.body)).to.equal(true);
      expect(first.headers.etag).to.equal(plain.headers.etag);
      for (let ask = 0; ask < 2; ask += 1) {
        const zipped = await asSent('/v1/effects', gzip);
        expect(zipped.status).to.equal(200);
        expect(zipped.headers['content-encoding']).to.equal('gzip');
        expect(zipped.headers.vary).to.equal('Accept-Encoding');
        expect(zipped.headers['content-type']).to.equal('application/json; charset=utf-8');
        expect(zipped.headers['content-length']).to.equal(String(zipped.body.length));
        expect(zipped.body.length).to.be.below(plain.body.length / 2);
        expect(gunzipSync(zipped.body).equals(plain.body)).to.equal(true);
        expect(zipped.headers.etag).to.equal(`${plain.headers.etag!.slice(0, -1)}-gzip"`);
      }
      const zippedEtag = `${plain.headers.etag!.slice(0, -1)}-gzip"`;
      for (const etag of [plain.headers.etag!, zippedEtag]) {
        for (const coding of [{}, gzip]) {
          const again = await asSent('/v1/effects', { ...coding, 'if-none-match': etag });
          expect(again.status).to.equal(304);
          expect(again.body.length).to.equal(0);
        }
      }
      // Any coding (`*`) takes gzip; gzip refused by its weight, even beside `*`, and a client naming
      // no coding: the JSON as it is.
      expect((await asSent('/v1/effects', { 'accept-encoding': 'br;q=1, *;q=0.5' })).headers['content-encoding']).to.equal('gzip');
      for (const refusing of ['gzip;q=0, identity', '*, GZIP; q=0', 'br, deflate']) {
        expect((await asSent('/v1/effects', { 'accept-encoding': refusing })).headers['content-encoding']).to.equal(undefined);
      }
      expect((await asSent('/v1/effects', { 'accept-encoding': 'identity' })).body.equals(plain.body)).to.equal(true);
      // A small answer goes as it is.
      for (let ask = 0; ask < 3; ask += 1) {
        const small = await asSent('/v1/categories', gzip);
        expect(small.body.length).to.be.below(1024);
        expect(small.headers['content-encoding']).to.equal(undefined);
      }
      // A search is kept from its second ask, so it goes gzipped from its third.
      const search = '/v1/effects?locale=en&search=effe';
      const asks = [await asSent(search, gzip), await asSent(search, gzip), await asSent(search, gzip)];
      expect(asks.map((ask) => ask.headers['content-encoding'])).to.deep.equal([undefined, undefined, 'gzip']);
      expect(asks[0].body.length).to.be.at.least(1024);
      expect(gunzipSync(asks[2].body).equals(asks[0].body)).to.equal(true);
    });

    it('compares If-None-Match as RFC 9110 says: a list, a weak form, *, and anything else is a full answer', async () => {
      const etag = (await api.get('/v1/effects')).headers.get('etag')!;
      expect((await api.get('/v1/effects', { headers: { 'if-none-match': `"other", ${etag}` } })).status).to.equal(304);
      expect((await api.get('/v1/effects', { headers: { 'if-none-match': `W/${etag}` } })).status).to.equal(304);
      expect((await api.get('/v1/effects', { headers: { 'if-none-match': '*' } })).status).to.equal(304);
      const other = await api.get('/v1/effects', { headers: { 'if-none-match': '"other"' } });
      expect(other.status).to.equal(200);
      expect(other.body.items).to.have.length(1);
      // A different page is a different answer.
      expect((await api.get('/v1/effects?limit=1&offset=1', { headers: { 'if-none-match': etag } })).status).to.equal(200);
    });

    it('gives a new ETag after a change and the same one when the answer is the same again', async () => {
      const { db } = services();
      const before = (await api.get('/v1/effects')).headers.get('etag')!;
      await db('effects').where({ slug: 'a' }).update({ cost: 99 });
      await app.catalogSettled();
      const changed = await api.get('/v1/effects', { headers: { 'if-none-match': before } });
      expect(changed.status).to.equal(200);
      expect(changed.body.items[0].cost).to.equal(99);
      await db('effects').where({ slug: 'a' }).update({ cost: 10 });
      await app.catalogSettled();
      expect((await api.get('/v1/effects', { headers: { 'if-none-match': before } })).status).to.equal(304);
    });

    it('answers 404 from the cache too, and shows the effect once it exists', async () => {
      expect((await api.get('/v1/effects/b')).status).to.equal(404);
      expect((await api.get('/v1/effects/b')).status).to.equal(404);
      await addEffect('b', { categories: ['portraits'] });
      await app.catalogSettled();
      expect((await api.get('/v1/effects/b')).status).to.equal(200);
    });

    it('marks an answer to a request with a token private, and still counts each viewer of a cached effect', async () => {
      const authorId = await addAuthor({ name: 'Ann' });
      await addEffect('community', { categories: ['portraits'], authorId });
      await app.catalogSettled();
      const [first, second] = [await makeUser(), await makeUser()];
      const one = await api.get('/v1/effects/community', { token: first.token });
      expect(one.headers.get('cache-control')).to.equal('private, no-cache');
      const two = await api.get('/v1/effects/community', { token: second.token });
      expect(two.body).to.deep.equal(one.body);
      const [{ count }] = await services().db('author_views').where({ author_id: authorId }).count<{ count: string }[]>('* as count');
      expect(Number(count)).to.equal(2);
    });

    it('looks up a search word once for a burst of searches that share it, and the missing words of one search together', async () => {
      const { db } = services();
      const lookups: string[][] = [];
      const listen = (query: { sql: string; bindings?: unknown[] }) => {
        if (query.sql.includes('query_words')) lookups.push((query.bindings ?? []).flat().filter((value): value is string => typeof value === 'string'));
      };
      db.on('query', listen);
      try {
        // Ten different searches (ten different answers), all needing the forms of "effct" at once.
        const searches = Array.from({ length: 10 }, (_, index) => `effct+word${index}`);
        const answers = await Promise.all(searches.map((search) => api.get(`/v1/effects?locale=en&search=${search}`)));
        for (const answer of answers) expect(answer.status).to.equal(200);
        expect(lookups.filter((words) => words.includes('effct'))).to.have.length(1);
        for (let index = 0; index < 10; index += 1) expect(lookups.filter((words) => words.includes(`word${index}`))).to.have.length(1);
        expect(lookups.length).to.be.at.most(10);

        // A new search made only of words already looked up reads none.
        const before = lookups.length;
        expect((await api.get('/v1/effects?locale=en&search=word3+effct+word7')).status).to.equal(200);
        expect(lookups).to.have.length(before);
      } finally {
        db.removeListener('query', listen);
      }
    });

    it('reads the search index and each effect\'s view once per catalog version, and again after a change, which the next search finds', async () => {
      const { db } = services();
      let indexReads = 0;
      let viewReads = 0;
      const listen = (query: { sql: string }) => {
        if (query.sql.includes('tsvector_to_array')) indexReads += 1;
        if (query.sql.includes('left join authors')) viewReads += 1;
      };
      db.on('query', listen);
      try {
        const searches = Array.from({ length: 10 }, (_, index) => `effec+other${index}`);
        const answers = await Promise.all(searches.map((search) => api.get(`/v1/effects?locale=en&search=${search}`)));
        for (const answer of answers) expect(slugsOf(answer)).to.deep.equal(['a']);
        expect((await api.get('/v1/effects?locale=en&search=effec+another')).status).to.equal(200);
        expect(indexReads).to.equal(1);
        // Eleven different pages, all showing the one effect: its view was read once.
        expect(viewReads).to.equal(1);

        await db('effects').where({ slug: 'a' }).update({ name_en: 'Lighthouse' });
        await app.catalogSettled();
        const found = await api.get('/v1/effects?locale=en&search=lighthouse');
        expect(found.body.items.map((effect: { name: string }) => effect.name)).to.deep.equal(['Lighthouse']);
        expect(indexReads).to.equal(2);
        expect(viewReads).to.equal(2);
      } finally {
        db.removeListener('query', listen);
        await db('effects').where({ slug: 'a' }).update({ name_en: 'Effect a' });
        await app.catalogSettled();
      }
    });

    it('serves nothing from memory while its LISTEN connection is lost, and starts empty when it is back', async () => {
      const { db, listenHub } = services();
      expect((await api.get('/v1/effects?locale=en')).body.items[0].name).to.equal('Effect a');
      await db.raw('select pg_terminate_backend(?, 5000)', [listenHub.backendPid()]);
      await db('effects').where({ slug: 'a' }).update({ name_en: 'Changed while deaf' });
      // Whether the hub has noticed yet or is already back, the answer is the committed state.
      expect((await api.get('/v1/effects?locale=en')).body.items[0].name).to.equal('Changed while deaf');
      await msUntil(async () => listenHub.backendPid(), (pid) => pid !== null, 5000);
      await db('effects').where({ slug: 'a' }).update({ name_en: 'After reconnect' });
      await msUntil(() => api.get('/v1/effects?locale=en'), (answer) => answer.body.items[0].name === 'After reconnect', 2000);
    });
  });
});
