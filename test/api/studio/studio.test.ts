import { expect } from 'chai';
import { seedStudioCategories } from '../../../db/studio/seed-studio-categories';
import { expectError } from '../../accounts';
import { client } from '../../client';
import { balanceOf, generationAndChargeCounts, insertEffect, photo, storedUpload } from '../../generation-fixtures';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';

describe('studio (README, "Studio")', () => {
  const t = useTestApp();
  let user: TestUser;
  let categories: Record<string, string>;
  beforeEach(async () => {
    await resetDatabase();
    await seedStudioCategories(services().db, { onlyIntoEmpty: true });
    const rows: { id: string; slug: string }[] = await services().db('studio_categories').select('id', 'slug');
    categories = Object.fromEntries(rows.map((row) => [row.slug, row.id]));
    user = await makeUser({ balance: 100 });
  });

  const counts = generationAndChargeCounts;

  describe('GET /v1/studio/categories', () => {
    it('answers the demo categories in order, localized, with the StudioCategory fields; guests allowed', async () => {
      const guest = await makeUser({ guest: true });
      const ru = await t.api.get('/v1/studio/categories', { token: guest.token });
      expect(ru.status).to.equal(200);
      expect(ru.body.map((category: { slug: string }) => category.slug)).to.deep.equal(['text-to-image', 'photo-edit', 'ask-stylist']);
      expect(ru.body[0]).to.have.keys('id', 'slug', 'name', 'description', 'output_type', 'cost', 'min_photos', 'max_photos');
      expect(ru.body.map(({ output_type, cost, min_photos, max_photos }: Record<string, unknown>) => [output_type, cost, min_photos, max_photos])).to.deep.equal([
        ['image', 8, 0, 0], ['image', 12, 1, 4], ['text', 2, 0, 1],
      ]);
      expect(ru.body[0].name).to.equal('Картинка по описанию');
      const en = await t.api.get('/v1/studio/categories?locale=en', { token: guest.token });
      expect(en.body[0].name).to.equal('Text to image');
      expectError(await t.api.get('/v1/studio/categories?locale=de', { token: guest.token }), 422, 'validation_error');
      expectError(await t.api.get('/v1/studio/categories'), 401, 'auth_required');
    });

    it('follows the operator: a disabled category is gone, positions reorder', async () => {
      const { db } = services();
      await db('studio_categories').where({ slug: 'photo-edit' }).update({ enabled: false });
      await db('studio_categories').where({ slug: 'ask-stylist' }).update({ position: -1 });
      const answer = await t.api.get('/v1/studio/categories', { token: user.token });
      expect(answer.body.map((category: { slug: string }) => category.slug)).to.deep.equal(['ask-stylist', 'text-to-image']);
    });

    it('seeds once into an empty table at start; npm run seed adds only missing slugs', async () => {
      const { db } = services();
      await db('studio_categories').where({ slug: 'ask-stylist' }).delete();
      await db('studio_categories').where({ slug: 'text-to-image' }).update({ cost: 9 });
      expect(await seedStudioCategories(db, { onlyIntoEmpty: true })).to.equal(false);
      expect(await db('studio_categories').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 2 }]);
      expect(await seedStudioCategories(db, { onlyIntoEmpty: false })).to.equal(true);
      expect((await db('studio_categories').where({ slug: 'text-to-image' }).first('cost')).cost).to.equal(9, 'an operator\'s change survives');
      expect(await db('studio_categories').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 3 }]);
    });
  });

  describe('POST /v1/studio/estimate', () => {
    it('answers cost, balance, enough and the queue figures, for a guest too, with no side effect', async () => {
      const guest = await makeUser({ guest: true, balance: 10 });
      const before = await counts();
      const answer = await t.api.post('/v1/studio/estimate', { category_id: categories['photo-edit'] }, { token: guest.token });
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body).to.have.keys('cost', 'balance', 'enough', 'queue_position', 'estimated_wait_s');
      expect(answer.body).to.include({ cost: 12, balance: 10, enough: false, queue_position: 1 });
      expect(answer.body.estimated_wait_s).to.be.a('number');
      expect((await t.api.post('/v1/studio/estimate', { category_id: 'ask-stylist', prompt: 'what to wear?' }, { token: guest.token })).body)
        .to.include({ cost: 2, balance: 10, enough: true });
      expect(await counts()).to.deep.equal(before);
      expect(await balanceOf(guest.id)).to.equal(10);
    });

    it('enough is the reserve\'s own rule: a balance equal to the cost is enough', async () => {
      const exact = await makeUser({ balance: 8 });
      expect((await t.api.post('/v1/studio/estimate', { category_id: 'text-to-image' }, { token: exact.token })).body.enough).to.equal(true);
      const created = await t.api.post('/v1/studio/generations', { category_id: 'text-to-image', prompt: 'a red fox' }, { token: exact.token });
      expect(created.status).to.equal(202);
    });

    it('places a new generation behind every waiting one', async () => {
      const upload = await storedUpload(user.id, await photo());
      const effect = await insertEffect('winter-portrait');
      for (let index = 0; index < 3; index += 1) {
        expect((await t.api.post('/v1/generations', { effect_id: effect, characters: [[upload]] }, { token: user.token })).status).to.equal(202);
      }
      expect((await t.api.post('/v1/studio/estimate', { category_id: 'text-to-image' }, { token: user.token })).body.queue_position).to.equal(4);
    });

    it('404 for an absent or disabled category; photos, when named, are checked as creation checks them', async () => {
      expectError(await t.api.post('/v1/studio/estimate', { category_id: 'no-such-task' }, { token: user.token }), 404, 'not_found');
      await services().db('studio_categories').where({ slug: 'ask-stylist' }).update({ enabled: false });
      expectError(await t.api.post('/v1/studio/estimate', { category_id: categories['ask-stylist'] }, { token: user.token }), 404, 'not_found');
      expectError(await t.api.post('/v1/studio/estimate', { category_id: 'photo-edit', upload_ids: ['00000000-0000-4000-8000-000000000000'] }, { token: user.token }), 404, 'not_found');
      const upload = await storedUpload(user.id, await photo());
      expectError(await t.api.post('/v1/studio/estimate', { category_id: 'text-to-image', upload_ids: [upload] }, { token: user.token }), 422, 'validation_error');
      expectError(await t.api.post('/v1/studio/estimate', {}, { token: user.token }), 422, 'validation_error');
      expectError(await t.api.post('/v1/studio/estimate', { category_id: 'text-to-image' }), 401, 'auth_required');
    });
  });

  describe('POST /v1/studio/generations', () => {
    const post = (body: object, as: TestUser = user, headers: Record<string, string> = {}) => t.api.post('/v1/studio/generations', body, { token: as.token, headers });

    /** A refusal leaves no trace: balance as it was, no generation, no reserve. */
    async function expectRefused(answer: { status: number; body: any; text: string }, status: number, code: string, balance = 100) {
      expectError(answer as never, status, code);
      expect(await balanceOf(user.id)).to.equal(balance);
      expect(await counts()).to.deep.equal({ generations: 0, ledger: 0 });
    }

    it('202 with the Generation: kind studio, its category and prompt, effect_id null; reserved, queued with its ticket', async () => {
      const upload = await storedUpload(user.id, await photo());
      const answer = await post({ category_id: categories['photo-edit'], prompt: 'make it autumn', upload_ids: [upload] });
      expect(answer.status, answer.text).to.equal(202);
      expect(answer.headers.get('location')).to.equal(`/v1/generations/${answer.body.id}`);
      expect(answer.body).to.include({
        kind: 'studio', status: 'pending', effect_id: null, effect: null, studio_category_id: categories['photo-edit'],
        prompt: 'make it autumn', output_type: 'image', result_url: null, result_text: null, preview: null, error_code: null, queue_position: 1,
      });
      const row = await services().db('generations').where({ id: answer.body.id }).first();
      expect(row).to.include({ kind: 'studio', effect_id: null, studio_category_id: categories['photo-edit'], cost: 12, model: 'photo_edit', output_type: 'image', prompt: 'make it autumn' });
      expect(row.inputs).to.deep.equal([{ upload_id: upload, object_key: `uploads/${user.id}/${upload}.jpg`, person: 0 }]);
      expect(await balanceOf(user.id)).to.equal(88);
      expect((await services().boss.getJobById('generation-submit.simulator', answer.body.id))?.data).to.deep.equal({ generationId: answer.body.id });
      const detail = await t.api.get(`/v1/generations/${answer.body.id}`, { token: user.token });
      expect(detail.body).to.deep.equal(answer.body);
      const list = await t.api.get('/v1/generations', { token: user.token });
      expect(list.body.items[0]).to.include({ id: answer.body.id, kind: 'studio', effect_id: null, studio_category_id: categories['photo-edit'] });
    });

    it('takes the category by slug, a text task without a photo, and a prompt of exactly 10000 characters', async () => {
      const answer = await post({ category_id: 'ask-stylist', prompt: 'ы'.repeat(10_000) });
      expect(answer.status, answer.text).to.equal(202);
      expect(answer.body).to.include({ output_type: 'text', studio_category_id: categories['ask-stylist'] });
      expect(await balanceOf(user.id)).to.equal(98);
    });

    it('403 registration_required for a guest, 401 without a token', async () => {
      const guest = await makeUser({ guest: true, balance: 100 });
      expectError(await post({ category_id: 'text-to-image', prompt: 'a cat' }, guest), 403, 'registration_required');
      expectError(await t.api.post('/v1/studio/generations', { category_id: 'text-to-image', prompt: 'a cat' }), 401, 'auth_required');
    });

    describe('refusals in the contract order (validation, category 404, uploads 404, photo count 422, 402, 503), before any credit moves', () => {
      it('validation: prompt missing, empty, blank or above 10000 characters; category_id missing; more than 4 upload_ids', async () => {
        for (const body of [
          { category_id: 'text-to-image' },
          { category_id: 'text-to-image', prompt: '' },
          { category_id: 'text-to-image', prompt: 'x'.repeat(10_001) },
          { prompt: 'a cat' },
          { category_id: 'photo-edit', prompt: 'a cat', upload_ids: ['a', 'b', 'c', 'd', 'e'] },
        ]) await expectRefused(await post(body), 422, 'validation_error');
        const blank = await post({ category_id: 'text-to-image', prompt: '  \n ' });
        await expectRefused(blank, 422, 'validation_error');
        expect(blank.body.error.details).to.deep.equal([{ loc: ['body', 'prompt'], msg: 'the prompt must not be blank', type: 'string_blank' }]);
      });

      it('validation before the category: a blank prompt for an absent category is 422', async () => {
        await expectRefused(await post({ category_id: 'no-such-task', prompt: ' ' }), 422, 'validation_error');
      });

      it('404 for an absent or disabled category, even with photos that are not there', async () => {
        await expectRefused(await post({ category_id: 'no-such-task', prompt: 'a cat', upload_ids: ['00000000-0000-4000-8000-000000000000'] }), 404, 'not_found');
        await services().db('studio_categories').where({ slug: 'text-to-image' }).update({ enabled: false });
        await expectRefused(await post({ category_id: categories['text-to-image'], prompt: 'a cat' }), 404, 'not_found');
      });

      it('404 for a category that no provider kind with an account here runs, as for a disabled one; its estimate too', async () => {
        await services().db('studio_categories').where({ slug: 'text-to-image' }).update({ runs: JSON.stringify({ replicate: { model: 'black-forest-labs/flux-dev' } }) });
        const refused = await post({ category_id: categories['text-to-image'], prompt: 'a cat' });
        await expectRefused(refused, 404, 'not_found');
        await services().db('studio_categories').where({ slug: 'text-to-image' }).update({ runs: null, enabled: false });
        expect(refused.body.error).to.deep.equal((await post({ category_id: categories['text-to-image'], prompt: 'a cat' })).body.error);
        await services().db('studio_categories').where({ slug: 'ask-stylist' }).update({ runs: JSON.stringify({ fal: { model: 'fal-ai/any-llm' } }) });
        expectError(await t.api.post('/v1/studio/estimate', { category_id: categories['ask-stylist'] }, { token: user.token }), 404, 'not_found');
      });

      it("404 for an absent or another user's upload, before the photo count", async () => {
        const stranger = await makeUser({ balance: 100 });
        const theirs = await storedUpload(stranger.id, await photo());
        await expectRefused(await post({ category_id: 'text-to-image', prompt: 'a cat', upload_ids: [theirs] }), 404, 'not_found');
        await expectRefused(await post({ category_id: 'photo-edit', prompt: 'a cat', upload_ids: ['not-a-uuid'] }), 404, 'not_found');
      });

      it('422 for an upload not completed, naming it', async () => {
        const done = await storedUpload(user.id, await photo());
        const pending = await storedUpload(user.id, null);
        const answer = await post({ category_id: 'photo-edit', prompt: 'a cat', upload_ids: [done, pending] });
        await expectRefused(answer, 422, 'validation_error');
        expect(answer.body.error.details).to.deep.equal([{ loc: ['body', 'upload_ids', 1], msg: 'the upload is not completed: no file was put into storage', type: 'upload_pending' }]);
      });

      it('422 for a photo count outside the category: too few, too many, twice the same', async () => {
        const [first, second] = [await storedUpload(user.id, await photo()), await storedUpload(user.id, await photo())];
        const few = await post({ category_id: 'photo-edit', prompt: 'a cat' });
        await expectRefused(few, 422, 'validation_error');
        expect(few.body.error.details[0]).to.include({ type: 'min_photos', msg: 'this task needs at least 1 photo' });
        const many = await post({ category_id: 'ask-stylist', prompt: 'a cat', upload_ids: [first, second] });
        await expectRefused(many, 422, 'validation_error');
        expect(many.body.error.details[0]).to.include({ type: 'max_photos', msg: 'this task takes at most 1 photo' });
        await expectRefused(await post({ category_id: 'text-to-image', prompt: 'a cat', upload_ids: [first] }), 422, 'validation_error');
        const twice = await post({ category_id: 'photo-edit', prompt: 'a cat', upload_ids: [first, first] });
        await expectRefused(twice, 422, 'validation_error');
        expect(twice.body.error.details[0]).to.deep.include({ loc: ['body', 'upload_ids', 1], type: 'duplicate_upload' });
      });

      it('photo count before credits: a poor user with too many photos gets 422, not 402', async () => {
        await services().db('users').where({ id: user.id }).update({ balance: 0 });
        const upload = await storedUpload(user.id, await photo());
        await expectRefused(await post({ category_id: 'text-to-image', prompt: 'a cat', upload_ids: [upload] }), 422, 'validation_error', 0);
      });

      it('402 insufficient_credits saying the cost and the balance: nothing written', async () => {
        await services().db('users').where({ id: user.id }).update({ balance: 7 });
        const answer = await post({ category_id: 'text-to-image', prompt: 'a cat' });
        await expectRefused(answer, 402, 'insufficient_credits', 7);
        const { cost } = await services().db('studio_categories').where({ slug: 'text-to-image' }).first('cost');
        expect(answer.body).to.deep.equal({ error: { code: 'insufficient_credits', message: `This costs ${cost} credits; your balance is 7.` } });
        await services().db('studio_categories').where({ slug: 'text-to-image' }).update({ cost: 1 });
        await services().db('users').where({ id: user.id }).update({ balance: 0 });
        expect((await post({ category_id: 'text-to-image', prompt: 'a cat' })).body.error.message).to.equal('This costs 1 credit; your balance is 0.');
      });

      it('503 provider_unavailable beyond MAX_QUEUED_GENERATIONS waiting, nothing charged', async () => {
        const small = await startTestApp({ config: { MAX_QUEUED_GENERATIONS: '1' } });
        try {
          const smallApi = client(small.url);
          expect((await smallApi.post('/v1/studio/generations', { category_id: 'text-to-image', prompt: 'a cat' }, { token: user.token })).status).to.equal(202);
          const refused = await smallApi.post('/v1/studio/generations', { category_id: 'text-to-image', prompt: 'a dog' }, { token: user.token });
          expectError(refused, 503, 'provider_unavailable');
          expect(await balanceOf(user.id)).to.equal(92);
        } finally {
          await small.close();
        }
      });
    });

    it('429 rate_limited from the write budget it shares with uploads and generations (decisions 7.3), nothing charged', async () => {
      const limited = await startTestApp({ config: { RATE_WRITE_BURST: '2', RATE_WRITE_PER_MINUTE: '1' } });
      try {
        const limitedApi = client(limited.url);
        expect((await limitedApi.post('/v1/uploads', { content_type: 'image/jpeg' }, { token: user.token })).status).to.equal(201);
        expect((await limitedApi.post('/v1/studio/generations', { category_id: 'text-to-image', prompt: 'a cat' }, { token: user.token })).status).to.equal(202);
        const refused = await limitedApi.post('/v1/studio/generations', { category_id: 'text-to-image', prompt: 'a dog' }, { token: user.token });
        expectError(refused, 429, 'rate_limited');
        expect(Number(refused.headers.get('retry-after'))).to.be.greaterThan(0);
        expect(await balanceOf(user.id)).to.equal(92);
        expect((await limitedApi.get('/v1/studio/categories', { token: user.token })).status, 'reads are another budget').to.equal(200);
      } finally {
        await limited.close();
      }
    });

    describe('Idempotency-Key, paired with POST /v1/generations', () => {
      const key = 'studio-retry-key-0123456789';
      const body = { category_id: 'text-to-image', prompt: 'a red fox in the snow' };

      it('same key and body: the same generation with its current state, 202, charged once', async () => {
        const first = await post(body, user, { 'Idempotency-Key': key });
        expect(first.status).to.equal(202);
        await services().db('generations').where({ id: first.body.id }).update({ status: 'processing', started_at: new Date() });
        const again = await post(body, user, { 'Idempotency-Key': key });
        expect(again.status).to.equal(202);
        expect(again.body).to.include({ id: first.body.id, status: 'processing', queue_position: null, estimated_wait_s: null });
        expect(await balanceOf(user.id)).to.equal(92);
        expect((await counts()).generations).to.equal(1);
      });

      it('same key, another body: 409 idempotency_key_reused, nothing charged', async () => {
        await post(body, user, { 'Idempotency-Key': key });
        expectError(await post({ ...body, prompt: 'a blue fox' }, user, { 'Idempotency-Key': key }), 409, 'idempotency_key_reused');
        expect(await balanceOf(user.id)).to.equal(92);
      });

      it('a key used on POST /v1/studio/generations is 409 on POST /v1/generations', async () => {
        const effect = await insertEffect('winter-portrait');
        const upload = await storedUpload(user.id, await photo());
        expect((await post(body, user, { 'Idempotency-Key': key })).status).to.equal(202);
        const there = await t.api.post('/v1/generations', { effect_id: effect, characters: [[upload]] }, { token: user.token, headers: { 'Idempotency-Key': key } });
        expectError(there, 409, 'idempotency_key_reused');
        expect(await balanceOf(user.id)).to.equal(92);
        expect((await counts()).generations).to.equal(1);
      });

      it('a key used on POST /v1/generations is 409 on POST /v1/studio/generations', async () => {
        const effect = await insertEffect('winter-portrait');
        const upload = await storedUpload(user.id, await photo());
        const first = await t.api.post('/v1/generations', { effect_id: effect, characters: [[upload]] }, { token: user.token, headers: { 'Idempotency-Key': key } });
        expect(first.status).to.equal(202);
        expectError(await post(body, user, { 'Idempotency-Key': key }), 409, 'idempotency_key_reused');
        expect(await balanceOf(user.id)).to.equal(90);
        expect((await counts()).generations).to.equal(1);
      });

      it('a refused request leaves the key free; a malformed key is 422', async () => {
        await services().db('users').where({ id: user.id }).update({ balance: 1 });
        expectError(await post(body, user, { 'Idempotency-Key': key }), 402, 'insufficient_credits');
        await services().db('users').where({ id: user.id }).update({ balance: 100 });
        expect((await post(body, user, { 'Idempotency-Key': key })).status).to.equal(202);
        expectError(await post(body, user, { 'Idempotency-Key': 'short' }), 422, 'validation_error');
      });
    });

    it('is published in /v1/openapi.json with the Idempotency-Key header and its answers; estimate and categories too', async () => {
      const document = (await t.api.get('/v1/openapi.json')).body;
      const operation = document.paths['/v1/studio/generations'].post;
      expect(operation.parameters.map((parameter: { name: string; in: string }) => `${parameter.in}:${parameter.name}`)).to.include('header:Idempotency-Key');
      expect(operation.responses).to.include.keys('202', '402', '404', '409', '422', '503');
      for (const path of ['/v1/studio/categories', '/v1/studio/estimate', '/v1/studio/generations', '/v1/generations/{id}/cancel']) {
        expect(JSON.stringify(document.paths[path]), path).not.to.contain('501');
      }
      expect(document.paths['/v1/generations/{id}'].get.responses['200'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/Generation' });
      expect(document.components.schemas.Generation.properties).to.include.keys('queue_position', 'estimated_wait_s', 'kind', 'result_text');
    });
  });
});
