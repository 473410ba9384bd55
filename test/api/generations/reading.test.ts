import { expect } from 'chai';
import { createGeneration } from '../../../api/generations/create';
import { insertEffect, photo, storedUpload } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';

describe('reading generations', () => {
  const t = useTestApp();
  let user: TestUser;
  let effectId: string;
  beforeEach(async () => {
    await resetDatabase();
    user = await makeUser({ guest: true, balance: 1000 });
    effectId = await insertEffect('winter-portrait');
  });

  async function generation(as: TestUser = user): Promise<string> {
    const upload = await storedUpload(as.id, await photo());
    return (await createGeneration(services(), as.id, { effect_id: effectId, characters: [[upload]] }, null)).body.id;
  }

  async function setState(id: string, fields: Record<string, unknown>) {
    await services().db('generations').where({ id }).update(fields);
  }

  it('lists the caller\'s generations newest first, paged, with the items of the contract', async () => {
    const ids = [await generation(), await generation(), await generation()];
    await generation(await makeUser({ guest: true, balance: 100 }));
    const first = await t.api.get('/v1/generations?limit=2', { token: user.token });
    expect(first.status).to.equal(200);
    expect(first.body).to.include({ total: 3, limit: 2, offset: 0 });
    expect(first.body.items.map((item: { id: string }) => item.id)).to.deep.equal([ids[2], ids[1]]);
    expect(first.body.items[0]).to.have.keys('id', 'kind', 'status', 'effect_id', 'studio_category_id', 'output_type', 'error_code', 'preview', 'created_at', 'finished_at');
    expect(first.body.items[0]).to.include({ kind: 'effect', status: 'pending', effect_id: effectId, studio_category_id: null, output_type: 'image', error_code: null, preview: null, finished_at: null });
    const second = await t.api.get('/v1/generations?limit=2&offset=2', { token: user.token });
    expect(second.body.items.map((item: { id: string }) => item.id)).to.deep.equal([ids[0]]);
  });

  it('filters by a valid status and refuses an unknown one', async () => {
    const [failed] = [await generation(), await generation()];
    await setState(failed, { status: 'failed', error_code: 'safety', finished_at: new Date() });
    const answer = await t.api.get('/v1/generations?status=failed', { token: user.token });
    expect(answer.body.items.map((item: { id: string; error_code: string }) => [item.id, item.error_code])).to.deep.equal([[failed, 'safety']]);
    expect(answer.body.total).to.equal(1);
    const refused = await t.api.get('/v1/generations?status=done', { token: user.token });
    expect(refused.status).to.equal(422);
    expect(refused.body.error.details[0].loc).to.deep.equal(['query', 'status']);
    expect((await t.api.get('/v1/generations?limit=101', { token: user.token })).status).to.equal(422);
    expect((await t.api.get('/v1/generations?offset=10001', { token: user.token })).status).to.equal(422);
  });

  it('hide: 204, gone from the list, still readable by id, hiding again is 204', async () => {
    const [kept, hidden] = [await generation(), await generation()];
    expect((await t.api.post(`/v1/generations/${hidden}/hide`, undefined, { token: user.token })).status).to.equal(204);
    expect((await t.api.post(`/v1/generations/${hidden}/hide`, undefined, { token: user.token })).status).to.equal(204);
    const list = await t.api.get('/v1/generations', { token: user.token });
    expect(list.body.items.map((item: { id: string }) => item.id)).to.deep.equal([kept]);
    expect((await t.api.get(`/v1/generations/${hidden}`, { token: user.token })).status).to.equal(200);
  });

  it("answers 404 for an absent or another user's generation and for an id that is not a UUID", async () => {
    const theirs = await generation(await makeUser({ guest: true, balance: 100 }));
    for (const path of [`/v1/generations/${theirs}`, '/v1/generations/00000000-0000-4000-8000-000000000000', '/v1/generations/not-a-uuid']) {
      const answer = await t.api.get(path, { token: user.token });
      expect(answer.status, path).to.equal(404);
      expect(answer.body.error.code).to.equal('not_found');
    }
    expect((await t.api.post(`/v1/generations/${theirs}/hide`, undefined, { token: user.token })).status).to.equal(404);
    expect((await t.api.post('/v1/generations/nope/hide', undefined, { token: user.token })).status).to.equal(404);
    expect((await t.api.get(`/v1/generations/${theirs}`)).status).to.equal(401);
  });

  it('shows the detail of a pending generation without result or preview, with its nested effect', async () => {
    const id = await generation();
    const detail = await t.api.get(`/v1/generations/${id}`, { token: user.token });
    expect(detail.body).to.have.keys('id', 'kind', 'status', 'effect_id', 'effect', 'studio_category_id', 'prompt', 'result_url', 'result_text', 'output_type',
      'error_code', 'preview', 'queue_position', 'estimated_wait_s', 'created_at', 'started_at', 'finished_at');
    expect(detail.body).to.include({ kind: 'effect', status: 'pending', effect_id: effectId, studio_category_id: null, prompt: null, result_url: null, result_text: null, preview: null, started_at: null, finished_at: null });
    expect(detail.body.queue_position).to.equal(1);
    expect(detail.body.estimated_wait_s).to.be.a('number');
    expect(detail.body.effect).to.include({ id: effectId, cost: 10, output_type: 'image' });
  });

  it('signs result and preview links for about an hour; the path is a stable cache key', async () => {
    const id = await generation();
    const resultKey = `results/${user.id}/${id}.png`;
    const thumbKey = `previews/${user.id}/${id}.webp`;
    await setState(id, { status: 'succeeded', result_key: resultKey, finished_at: new Date(), preview: JSON.stringify({ thumb_key: thumbKey, poster_key: null, width: 10, height: 20, blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj' }) });
    const first = await t.api.get(`/v1/generations/${id}`, { token: user.token });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const second = await t.api.get(`/v1/generations/${id}`, { token: user.token });
    expect(new URL(first.body.result_url).pathname).to.equal(new URL(second.body.result_url).pathname).and.to.equal(`/media/${resultKey}`);
    expect(first.body.result_url).not.to.equal(second.body.result_url);
    expect(new URL(first.body.preview.thumb).searchParams.get('X-Amz-Expires')).to.equal('3600');
    expect(first.body.preview).to.include({ poster: null, width: 10, height: 20 });
    const list = await t.api.get('/v1/generations', { token: user.token });
    expect(new URL(list.body.items[0].preview.thumb).pathname).to.equal(`/media/${thumbKey}`);
  });
});
