import { expect } from 'chai';
import { createOnce } from '../../../api/idempotency/create-once';
import { checkUpload, maxUploadBytes } from '../../../api/uploads/uploads';
import { client } from '../../client';
import { hugePngHeader } from '../../images';
import { balanceOf, generationAndChargeCounts, insertDemoEffects, insertEffect, photo, storedUpload, type DemoSlug } from '../../generation-fixtures';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';

describe('POST /v1/generations', () => {
  const t = useTestApp();
  let effects: Record<DemoSlug, string>;
  let user: TestUser;
  let upload: string;
  beforeEach(async () => {
    await resetDatabase();
    effects = await insertDemoEffects();
    user = await makeUser({ guest: true, balance: 100 });
    upload = await storedUpload(user.id, await photo());
  });

  const post = (body: object, as: TestUser = user, headers: Record<string, string> = {}) => t.api.post('/v1/generations', body, { token: as.token, headers });

  const counts = generationAndChargeCounts;

  /** A refusal must leave no trace: balance as it was, no generation, no reserve. */
  async function expectRefused(answer: { status: number; body: any }, status: number, code: string, balance = 100, who: TestUser = user) {
    expect(answer.status, JSON.stringify(answer.body)).to.equal(status);
    expect(answer.body.error.code).to.equal(code);
    expect(await balanceOf(who.id)).to.equal(balance);
    expect(await counts()).to.deep.equal({ generations: 0, ledger: 0 });
  }

  describe('accepting', () => {
    it('reserves the cost, stores a pending generation with its queue ticket, answers 202 {id, status}', async () => {
      const answer = await post({ effect_id: effects['winter-portrait'], characters: [[upload]] });
      expect(answer.status).to.equal(202);
      expect(answer.body).to.deep.equal({ id: answer.body.id, status: 'pending' });
      expect(answer.headers.get('location')).to.equal(`/v1/generations/${answer.body.id}`);
      const { db } = services();
      const row = await db('generations').where({ id: answer.body.id }).first();
      expect(row).to.include({ user_id: user.id, effect_id: effects['winter-portrait'], status: 'pending', cost: 10, output_type: 'image', model: 'image' });
      expect(row.inputs).to.deep.equal([{ upload_id: upload, object_key: `uploads/${user.id}/${upload}.jpg`, person: 0 }]);
      expect(await balanceOf(user.id)).to.equal(90);
      expect(await db('credit_transactions').where({ user_id: user.id, kind: 'reserve' }).select('amount', 'reference')).to.deep.equal([{ amount: -10, reference: answer.body.id }]);
      const job = await services().boss.getJobById('generation-submit.simulator', answer.body.id);
      expect(job?.data).to.deep.equal({ generationId: answer.body.id });
    });

    it('accepts the effect by slug and the legacy flat form', async () => {
      const answer = await post({ effect_id: 'multi-angle-hero', upload_id: upload, additional_uploads: [upload] });
      expect(answer.status).to.equal(202);
    });

    it('creates a new generation for every request without a key', async () => {
      const first = await post({ effect_id: effects['winter-portrait'], characters: [[upload]] });
      const second = await post({ effect_id: effects['winter-portrait'], characters: [[upload]] });
      expect(first.body.id).not.to.equal(second.body.id);
      expect(await balanceOf(user.id)).to.equal(80);
    });
  });

  describe('refusals, in the contract order, all before any credit moves', () => {
    it('1. 404 for an absent, hidden or unknown effect', async () => {
      await expectRefused(await post({ effect_id: '00000000-0000-4000-8000-000000000000', characters: [[upload]] }), 404, 'not_found');
      await expectRefused(await post({ effect_id: 'no-such-slug', characters: [[upload]] }), 404, 'not_found');
      const hidden = await insertEffect('hidden-effect', { hidden: true });
      await expectRefused(await post({ effect_id: hidden, characters: [[upload]] }), 404, 'not_found');
    });

    it('1. 404 for an effect that no provider kind with an account here runs, as for a hidden one; one whose route has an account is taken', async () => {
      // The default deployment has simulator accounts only.
      const falOnly = await insertEffect('fal-only', { runs: { fal: { model: 'fal-ai/flux/dev' } } });
      const hidden = await insertEffect('hidden-again', { hidden: true });
      const refusals = [await post({ effect_id: falOnly, characters: [[upload]] }), await post({ effect_id: hidden, characters: [[upload]] })];
      await expectRefused(refusals[0], 404, 'not_found');
      expect(refusals[0].body.error).to.deep.equal(refusals[1].body.error);
      const both = await insertEffect('fal-or-simulator', { runs: { fal: { model: 'fal-ai/flux/dev' }, simulator: { model: 'image-pro' } } });
      const answer = await post({ effect_id: both, characters: [[upload]] });
      expect(answer.status, answer.text).to.equal(202);
      expect(await services().db('generations').where({ id: answer.body.id }).first('provider_kind', 'route', 'model')).to.deep.equal({ provider_kind: 'simulator', route: { model: 'image-pro' }, model: 'image' });
    });

    it('1. takes the first kind of PROVIDER_KIND_ORDER with an account, keeps its route on the generation, and queues it in that kind\'s line', async () => {
      const app = await startTestApp({ config: { PROVIDER_ACCOUNTS: 'acct-one:2', FAL_ACCOUNTS: 'fal-id:fal-secret:2' } });
      try {
        const route = { model: 'fal-ai/flux/dev', input: { image_url: '{{photo}}' }, output: 'images[0].url' };
        const effect = await insertEffect('fal-first', { runs: { fal: route, simulator: { model: 'image' } } });
        const answer = await client(app.url).post('/v1/generations', { effect_id: effect, characters: [[upload]] }, { token: user.token });
        expect(answer.status, answer.text).to.equal(202);
        expect(await services().db('generations').where({ id: answer.body.id }).first('provider_kind', 'route')).to.deep.equal({ provider_kind: 'fal', route });
        expect((await services().boss.getJobById('generation-submit.fal', answer.body.id))?.data).to.deep.equal({ generationId: answer.body.id });
        // A later change of the catalog leaves the generation in line as it was.
        await services().db('effects').where({ id: effect }).update({ runs: JSON.stringify({ simulator: { model: 'image' } }) });
        expect(await services().db('generations').where({ id: answer.body.id }).first('provider_kind', 'route')).to.deep.equal({ provider_kind: 'fal', route });
      } finally {
        await app.close();
      }
    });

    it("1. 404 for an absent or another user's upload, or one that is not a UUID", async () => {
      const stranger = await makeUser({ guest: true, balance: 100 });
      const theirs = await storedUpload(stranger.id, await photo());
      await expectRefused(await post({ effect_id: effects['multi-angle-hero'], characters: [[upload, theirs]] }), 404, 'not_found');
      await expectRefused(await post({ effect_id: effects['winter-portrait'], upload_id: '00000000-0000-4000-8000-000000000000' }), 404, 'not_found');
      await expectRefused(await post({ effect_id: effects['winter-portrait'], characters: [['not-a-uuid']] }), 404, 'not_found');
    });

    it('1 before 2: 404 for an absent effect even when an upload is not completed', async () => {
      const pending = await storedUpload(user.id, null);
      await expectRefused(await post({ effect_id: 'no-such-slug', characters: [[pending]] }), 404, 'not_found');
    });

    it('2. 422 for an upload whose file was never put into storage, naming it', async () => {
      const pending = await storedUpload(user.id, null);
      const answer = await post({ effect_id: effects['multi-angle-hero'], characters: [[upload, pending]] });
      await expectRefused(answer, 422, 'validation_error');
      expect(answer.body.error.details).to.deep.equal([{ loc: ['body', 'characters', 0, 1], msg: 'the upload is not completed: no file was put into storage', type: 'upload_pending' }]);
    });

    it('2. 422 for a file above 15 MB: the store refuses it, and the check at use would too', async () => {
      const big = await storedUpload(user.id, Buffer.alloc(15 * 1024 * 1024 + 1, 1));
      const answer = await post({ effect_id: effects['winter-portrait'], upload_id: big });
      await expectRefused(answer, 422, 'validation_error');
      expect(answer.body.error.details[0]).to.include({ type: 'upload_pending' });
      // Behind a store that would take it through its ticket all the same.
      const row = { id: big, user_id: user.id, object_key: 'uploads/x.jpg', content_type: 'image/jpeg', created_at: new Date() };
      expect(checkUpload(row, { size: maxUploadBytes + 1, contentType: 'image/jpeg', viaItsTicket: true })).to.equal('too_large');
    });

    it('reads each photo\'s first bytes as it looks at it: a generation whose photos show usable images is marked so (the dispatcher reads none), one with a photo that shows none is not (the dispatcher reads it, and refuses it)', async () => {
      const checked = async (uploadId: string) => {
        const answer = await post({ effect_id: effects['winter-portrait'], upload_id: uploadId });
        expect(answer.status, answer.text).to.equal(202);
        return (await services().db('generations').where({ id: answer.body.id }).first('photo_headers_checked')).photo_headers_checked;
      };
      expect(await checked(upload), 'a photo').to.equal(true);
      expect(await checked(await storedUpload(user.id, Buffer.from('not an image at all'))), 'no image').to.equal(false);
      expect(await checked(await storedUpload(user.id, hugePngHeader(12_000), 'image/png')), 'above 100 megapixels').to.equal(false);
    });

    it('2 before 3: an unfinished upload is named before a wrong number of photos', async () => {
      const pending = await storedUpload(user.id, null);
      const answer = await post({ effect_id: effects['winter-portrait'], characters: [[upload, pending]] });
      expect(answer.body.error.details[0].type).to.equal('upload_pending');
    });

    it('2 before 5 and 8: an unfinished upload is named before a shortfall and before a missing price (its object is looked at while the reserve runs), nothing charged', async () => {
      const poor = await makeUser({ guest: true, balance: 9 });
      const theirs = await storedUpload(poor.id, null);
      const short = await post({ effect_id: effects['winter-portrait'], characters: [[theirs]] }, poor);
      await expectRefused(short, 422, 'validation_error', 9, poor);
      expect(short.body.error.details[0].type).to.equal('upload_pending');

      const unpriced = await insertEffect('fresh-template', { cost: 0 });
      const pending = await storedUpload(user.id, null);
      const unpricedAnswer = await post({ effect_id: unpriced, characters: [[pending]] });
      await expectRefused(unpricedAnswer, 422, 'validation_error');
      expect(unpricedAnswer.body.error.details[0].type).to.equal('upload_pending');
    });

    it('3. 422 for a characters rule (here: more people than the effect has)', async () => {
      const other = await storedUpload(user.id, await photo());
      const answer = await post({ effect_id: effects['winter-portrait'], characters: [[upload], [other]] });
      await expectRefused(answer, 422, 'validation_error');
      expect(answer.body.error.details[0].type).to.equal('max_people');
    });

    it('4. 422 characters_required for a flat list whose ownership is ambiguous', async () => {
      const other = await storedUpload(user.id, await photo());
      await expectRefused(await post({ effect_id: effects['family-trio'], upload_id: upload, additional_uploads: [other] }), 422, 'characters_required');
    });

    it('3 and 4 before 5: a photo rule is answered even without credits', async () => {
      const poor = await makeUser({ guest: true });
      const theirs = await storedUpload(poor.id, await photo());
      await expectRefused(await post({ effect_id: effects['family-trio'], upload_id: theirs }, poor), 422, 'characters_required', 0, poor);
    });

    it('5. 402 insufficient_credits saying the cost and the balance: no generation, no reserve, balance untouched', async () => {
      const poor = await makeUser({ guest: true, balance: 9 });
      const theirs = await storedUpload(poor.id, await photo());
      const answer = await post({ effect_id: effects['winter-portrait'], characters: [[theirs]] }, poor);
      await expectRefused(answer, 402, 'insufficient_credits', 9, poor);
      expect(answer.body).to.deep.equal({ error: { code: 'insufficient_credits', message: 'This costs 10 credits; your balance is 9.' } });
    });

    it('8. 422 for an effect whose price is not assigned yet (cost 0), nothing charged', async () => {
      const unpriced = await insertEffect('fresh-template', { cost: 0 });
      const answer = await post({ effect_id: unpriced, characters: [[upload]] });
      await expectRefused(answer, 422, 'validation_error');
      expect(answer.body.error.details[0].type).to.equal('cost_not_assigned');
    });

    it('6. 503 provider_unavailable only beyond MAX_QUEUED_GENERATIONS waiting, nothing charged', async () => {
      const small = await startTestApp({ config: { MAX_QUEUED_GENERATIONS: '1' } });
      try {
        const smallApi = client(small.url);
        const first = await smallApi.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] }, { token: user.token });
        expect(first.status).to.equal(202);
        const second = await smallApi.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] }, { token: user.token });
        expect(second.status).to.equal(503);
        expect(second.body.error.code).to.equal('provider_unavailable');
        expect(await balanceOf(user.id)).to.equal(90);
        expect((await counts()).generations).to.equal(1);
      } finally {
        await small.close();
      }
    });

    it('2 before 6: with the queue full, an unfinished upload is named, not 503, nothing charged', async () => {
      const small = await startTestApp({ config: { MAX_QUEUED_GENERATIONS: '1' } });
      try {
        const smallApi = client(small.url);
        expect((await smallApi.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] }, { token: user.token })).status).to.equal(202);
        const pending = await storedUpload(user.id, null);
        const refused = await smallApi.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[pending]] }, { token: user.token });
        expect(refused.status).to.equal(422);
        expect(refused.body.error.details[0].type).to.equal('upload_pending');
        expect(await balanceOf(user.id)).to.equal(90);
        expect((await counts()).generations).to.equal(1);
      } finally {
        await small.close();
      }
    });

    it('validates the body shape: 4 people of 4 photos at most, 15 additional uploads, effect_id required', async () => {
      const five = Array.from({ length: 5 }, () => upload);
      await expectRefused(await post({ effect_id: effects['winter-portrait'], characters: [five] }), 422, 'validation_error');
      await expectRefused(await post({ effect_id: effects['winter-portrait'], characters: [[upload], [upload], [upload], [upload], [upload]] }), 422, 'validation_error');
      await expectRefused(await post({ effect_id: effects['winter-portrait'], upload_id: upload, additional_uploads: Array.from({ length: 16 }, () => upload) }), 422, 'validation_error');
      await expectRefused(await post({ characters: [[upload]] }), 422, 'validation_error');
    });

    it('401 without a token; a guest may generate', async () => {
      expect((await t.api.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] })).status).to.equal(401);
      expect(user).to.exist;
      const guest = await makeUser({ guest: true, balance: 50 });
      const theirs = await storedUpload(guest.id, await photo());
      expect((await post({ effect_id: effects['winter-portrait'], characters: [[theirs]] }, guest)).status).to.equal(202);
    });
  });

  describe('Idempotency-Key (the contract: idempotent retries)', () => {
    const key = 'retry-key-0123456789';
    const body = () => ({ effect_id: effects['winter-portrait'], characters: [[upload]] });

    it('same key and body: the same generation, 202, with its current status, charged once', async () => {
      const first = await post(body(), user, { 'Idempotency-Key': key });
      expect(first.status).to.equal(202);
      await services().db('generations').where({ id: first.body.id }).update({ status: 'processing' });
      const again = await post({ characters: [[upload]], effect_id: effects['winter-portrait'] }, user, { 'Idempotency-Key': key });
      expect(again.status).to.equal(202);
      expect(again.body).to.deep.equal({ id: first.body.id, status: 'processing' });
      expect(await balanceOf(user.id)).to.equal(90);
      expect((await counts()).generations).to.equal(1);
    });

    it('a repeat is answered even when it could no longer be created (effect hidden, balance gone)', async () => {
      const first = await post(body(), user, { 'Idempotency-Key': key });
      await services().db('effects').where({ id: effects['winter-portrait'] }).update({ hidden: true });
      await services().db('users').where({ id: user.id }).update({ balance: 0 });
      const again = await post(body(), user, { 'Idempotency-Key': key });
      expect(again.status).to.equal(202);
      expect(again.body.id).to.equal(first.body.id);
    });

    it('same key, different body: 409 idempotency_key_reused, nothing charged', async () => {
      await post(body(), user, { 'Idempotency-Key': key });
      const other = await storedUpload(user.id, await photo());
      const answer = await post({ effect_id: effects['winter-portrait'], characters: [[other]] }, user, { 'Idempotency-Key': key });
      expect(answer.status).to.equal(409);
      expect(answer.body.error.code).to.equal('idempotency_key_reused');
      expect(await balanceOf(user.id)).to.equal(90);
    });

    it('the studio endpoint shares the key space: a key used there is 409 here, and the other way round', async () => {
      const { db } = services();
      const studio = (key: string) => ({ key, pair: 'generation' as const, endpoint: 'POST /v1/studio/generations' });
      const studioObject = '11111111-1111-4111-8111-111111111111';
      const studioCreation = (key: string) => createOnce({
        db, userId: user.id, idempotency: studio(key), body: body(), statusCode: 202,
        prepare: async () => undefined, create: async () => studioObject, find: async (id) => ({ state: 'done' as const, answer: id }),
      });
      await studioCreation('studio-key-0123456789');
      const here = await post(body(), user, { 'Idempotency-Key': 'studio-key-0123456789' });
      expect(here.status).to.equal(409);
      expect(here.body.error.code).to.equal('idempotency_key_reused');

      await post(body(), user, { 'Idempotency-Key': key });
      const there = await studioCreation(key).then(() => null, (error: { code?: string }) => error.code);
      expect(there).to.equal('idempotency_key_reused');
    });

    it('a refused request leaves the key free', async () => {
      await services().db('users').where({ id: user.id }).update({ balance: 5 });
      const refused = await post(body(), user, { 'Idempotency-Key': key });
      expect(refused.status).to.equal(402);
      const unknown = await post({ effect_id: 'no-such-slug', characters: [[upload]] }, user, { 'Idempotency-Key': key });
      expect(unknown.status).to.equal(404);
      await services().db('users').where({ id: user.id }).update({ balance: 100 });
      const accepted = await post(body(), user, { 'Idempotency-Key': key });
      expect(accepted.status).to.equal(202);
    });

    it('a key belongs to its user: another user with the same key gets a generation of their own', async () => {
      const other = await makeUser({ guest: true, balance: 100 });
      const theirs = await storedUpload(other.id, await photo());
      const mine = await post(body(), user, { 'Idempotency-Key': key });
      const their = await post({ effect_id: effects['winter-portrait'], characters: [[theirs]] }, other, { 'Idempotency-Key': key });
      expect(their.status).to.equal(202);
      expect(their.body.id).not.to.equal(mine.body.id);
    });

    it('concurrent duplicates (5 at once, credits for one): one generation, one reserve, every answer the same 202', async () => {
      await services().db('users').where({ id: user.id }).update({ balance: 10 });
      const answers = await Promise.all(Array.from({ length: 5 }, () => post(body(), user, { 'Idempotency-Key': key })));
      expect(answers.map((answer) => answer.status)).to.deep.equal([202, 202, 202, 202, 202]);
      expect(new Set(answers.map((answer) => answer.body.id)).size).to.equal(1);
      expect(await counts()).to.deep.equal({ generations: 1, ledger: 1 });
      expect(await balanceOf(user.id)).to.equal(0);
    });

    it('is published in /v1/openapi.json with its header and answers', async () => {
      const document = (await t.api.get('/v1/openapi.json')).body;
      const operation = document.paths['/v1/generations'].post;
      expect(operation.parameters.map((parameter: { name: string; in: string }) => `${parameter.in}:${parameter.name}`)).to.include('header:Idempotency-Key');
      expect(operation.responses).to.include.keys('202', '402', '404', '409', '422', '503');
      for (const path of ['/v1/uploads', '/v1/uploads/{id}', '/v1/generations/{id}', '/v1/generations/{id}/hide']) expect(document.paths).to.have.property(path);
      expect(JSON.stringify(document.paths['/v1/generations'])).not.to.contain('501');
    });

    it('refuses a malformed key with 422', async () => {
      const answer = await post(body(), user, { 'Idempotency-Key': 'short' });
      await expectRefused(answer, 422, 'validation_error');
    });
  });
});
