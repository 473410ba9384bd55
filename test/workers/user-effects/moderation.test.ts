import { expect } from 'chai';
import { expectError } from '../../accounts';
import { photo, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { startMarketplacePipeline, submission, waitForStatus } from '../../user-effect-fixtures';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { kindRoute, overKind } from '../../provider-kind';

describe(overKind('marketplace: moderation in the worker fleet, the community catalog, generations and earnings'), function () {
  this.timeout(60_000);
  const handle = useTestApp();
  let pipeline: Pipeline;
  let author: TestUser;

  // The pool's accounts are synced when the pipeline starts, after the tables are emptied.
  beforeEach(async () => {
    await resetDatabase();
    // Long enough that the test sees the moderation round hold its provider slot.
    pipeline = await startMarketplacePipeline({ simulator: { latencyMs: 400 } });
    author = await makeUser({ balance: 100 });
  });
  afterEach(() => pipeline.stop());

  async function submit(fields: Record<string, unknown> = {}, user = author) {
    const answer = await handle.api.post('/v1/user-effects', await submission(user.id, fields), { token: user.token });
    expect(answer.status, answer.text).to.equal(202);
    return answer.body as { id: string };
  }

  async function launch(user: TestUser, effectId: string) {
    const upload = await storedUpload(user.id, await photo());
    return handle.api.post('/v1/generations', { effect_id: effectId, characters: [[upload]] }, { token: user.token });
  }

  it('approves a public one through the provider\'s moderation model on a leased slot, with its preview first; listed in community with the user as author', async () => {
    await services().db('users').where({ id: author.id }).update({ name: 'Lena Makes' });
    const { id } = await submit();
    // The round holds a provider slot while the model runs, like any provider task.
    await eventually(() => services().db('provider_slots').where({ user_effect_id: id }).first(), Boolean);
    const approved = await waitForStatus(id, 'approved');
    expect(approved.preview).to.include.keys('thumb', 'card', 'full');
    expect(await services().db('provider_slots').where({ user_effect_id: id })).to.deep.equal([]);
    expect(pipeline.simulator.stats().submitted).to.be.at.least(1);

    const view = await handle.api.get(`/v1/user-effects/${id}`, { token: author.token });
    expect(view.body).to.include({ status: 'approved', effect_id: approved.effect_id, rejection_reason: null });
    expect(view.body.preview.thumb).to.match(/^http/);

    const categories = await handle.api.get('/v1/categories');
    const community = categories.body.find((category: { slug: string }) => category.slug === 'community');
    expect(community).to.include({ effect_count: 1 });
    expect(community.position).to.equal(Math.max(...categories.body.map((category: { position: number }) => category.position)));
    const listed = await handle.api.get('/v1/effects?category=community');
    expect(listed.body.items.map((effect: { id: string }) => effect.id)).to.deep.equal([approved.effect_id]);
    expect(listed.body.items[0]).to.include({ name: 'Neon portrait', cost: 10, output_type: 'image', author_name: 'Lena Makes' });
    const authorId = listed.body.items[0].author_id;
    const page = await handle.api.get(`/v1/authors/${authorId}`);
    expect(page.status).to.equal(200);
    expect(page.body).to.include({ id: authorId, name: 'Lena Makes' });
    expect(page.body.effects.items.map((effect: { id: string }) => effect.id)).to.deep.equal([approved.effect_id]);
  });

  it('another user\'s generation goes through the ordinary pipeline and earns the author 20 % pending, settling 7 billing days later; the author\'s own earns nothing', async () => {
    const { id } = await submit({ output_type: 'video' });
    const { effect_id: effectId } = await waitForStatus(id, 'approved');
    const buyer = await makeUser({ balance: 100 });
    const launched = await launch(buyer, effectId!);
    expect(launched.status, launched.text).to.equal(202);
    expect(await waitForTerminal(launched.body.id, 40_000)).to.deep.equal({ status: 'succeeded', error_code: null });
    const generation = await services().db('generations').where({ id: launched.body.id }).first('prompt', 'cost', 'model');
    expect(generation).to.deep.equal({ prompt: 'a neon portrait at night', cost: 40, model: kindRoute('video').model });
    const [earning] = await services().db('user_effect_earnings').where({ user_id: author.id });
    expect(earning).to.include({ user_effect_id: id, effect_id: effectId, generation_id: launched.body.id, amount: 8, status: 'pending' });
    const days = (earning.settles_at.getTime() - earning.created_at.getTime()) / 1000 / services().config.billingDayS;
    expect(days).to.be.closeTo(7, 0.001);

    const own = await launch(author, effectId!);
    expect(await waitForTerminal(own.body.id, 40_000)).to.include({ status: 'succeeded' });
    expect(await services().db('user_effect_earnings').where({ user_id: author.id })).to.have.length(1);
  });

  it('rejects with content_policy and with bad_sample; nothing in the catalog', async () => {
    const policy = await submit({ prompt: 'something Forbidden here' });
    const broken = await storedUpload(author.id, Buffer.from('this is no photo at all'), 'image/jpeg');
    const sample = await submit({ sample_upload_id: broken });
    expect(await waitForStatus(policy.id, 'rejected')).to.include({ rejection_reason: 'content_policy', effect_id: null });
    expect(await waitForStatus(sample.id, 'rejected')).to.include({ rejection_reason: 'bad_sample', effect_id: null, preview: null });
    expect((await handle.api.get('/v1/effects?category=community')).body.items).to.deep.equal([]);
  });

  it('a private one is its author\'s only: opened and launched by the author, 404 for everyone else, never listed; publish moderates it again into the catalog', async () => {
    const { id } = await submit({ visibility: 'private' });
    const kept = await waitForStatus(id, 'private');
    const effectId = kept.effect_id!;
    const stranger = await makeUser({ balance: 100 });
    expect((await handle.api.get(`/v1/effects/${effectId}`, { token: author.token })).status).to.equal(200);
    expectError(await handle.api.get(`/v1/effects/${effectId}`, { token: stranger.token }), 404, 'not_found');
    expectError(await handle.api.get(`/v1/effects/${effectId}`), 404, 'not_found');
    expectError(await launch(stranger, effectId), 404, 'not_found');
    expect((await handle.api.get('/v1/effects')).body.items).to.deep.equal([]);
    const authorId = (await services().db('effects').where({ id: effectId }).first('author_id')).author_id;
    expectError(await handle.api.get(`/v1/authors/${authorId}`), 404, 'not_found');
    const own = await launch(author, effectId);
    expect(own.status, own.text).to.equal(202);
    expect(await waitForTerminal(own.body.id, 40_000)).to.include({ status: 'succeeded' });

    const published = await handle.api.post(`/v1/user-effects/${id}/publish`, {}, { token: author.token });
    expect(published.body).to.include({ status: 'processing', effect_id: effectId });
    // While moderated again: still the author's only (usable by the author in any status but rejected and archived).
    expectError(await handle.api.get(`/v1/effects/${effectId}`, { token: stranger.token }), 404, 'not_found');
    await waitForStatus(id, 'approved');
    expect((await handle.api.get(`/v1/effects/${effectId}`, { token: stranger.token })).status).to.equal(200);
    expect((await launch(stranger, effectId)).status).to.equal(202);
  });

  it('unpublished or archived, it leaves the catalog and stops launching for others', async () => {
    const { id } = await submit();
    const { effect_id: effectId } = await waitForStatus(id, 'approved');
    const stranger = await makeUser({ balance: 100 });
    expect((await handle.api.post(`/v1/user-effects/${id}/unpublish`, {}, { token: author.token })).status).to.equal(200);
    expect((await handle.api.get('/v1/effects?category=community')).body.items).to.deep.equal([]);
    expectError(await launch(stranger, effectId!), 404, 'not_found');
    expect((await launch(author, effectId!)).status).to.equal(202);
    expect((await handle.api.delete(`/v1/user-effects/${id}`, { token: author.token })).status).to.equal(204);
    expectError(await launch(author, effectId!), 404, 'not_found');
  });

  it('a community effect counts one view a day per signed-in viewer for its author (not the author\'s own, not anonymous)', async () => {
    const { id } = await submit();
    const { effect_id: effectId } = await waitForStatus(id, 'approved');
    const viewers = [await makeUser(), await makeUser()];
    for (const viewer of [...viewers, viewers[0], author]) expect((await handle.api.get(`/v1/effects/${effectId}`, { token: viewer.token })).status).to.equal(200);
    expect((await handle.api.get(`/v1/effects/${effectId}`)).status).to.equal(200);
    const views = await services().db('author_views').select('viewer_id');
    expect(views.map((view: { viewer_id: string }) => view.viewer_id).sort()).to.deep.equal(viewers.map((viewer) => viewer.id).sort());
  });

  it('an archived one finds its moderation round changing nothing', async () => {
    const { id } = await submit();
    expect((await handle.api.delete(`/v1/user-effects/${id}`, { token: author.token })).status).to.equal(204);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await services().db('user_effects').where({ id }).first()).to.include({ status: 'archived', effect_id: null });
    expect(await services().db('provider_slots').whereNotNull('user_effect_id')).to.deep.equal([]);
  });
});
