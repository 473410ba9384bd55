import { expect } from 'chai';
import { signAccessToken } from '../../../api/tokens/access-token';
import { approveUserEffect } from '../../../db/user-effects/approve-user-effect';
import { startService, type ServiceProcess } from '../../../scripts/bench-processes';
import { expectError } from '../../accounts';
import { client, type Api } from '../../client';
import { resetDatabase, serviceEnv, services, useTestApp } from '../../harness';
import { userEffectIn } from '../../user-effect-fixtures';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';

/**
 * What each move of a user effect does to the public catalog, read through a SECOND web process (a
 * real one, which hears of catalog changes only through Postgres): every move that changes the
 * catalog reaches it at once, and a private effect is its author's only, never in what is shared.
 */
describe('user effects in the catalog, seen by a second web process', function () {
  this.timeout(90_000);
  const handle = useTestApp();
  let second: ServiceProcess;
  let other: Api;
  let author: TestUser;
  let stranger: TestUser;
  // Tokens the second process accepts: signed with its own TOKEN_SECRET.
  let authorThere: string;
  let strangerThere: string;

  before(async () => {
    second = await startService(['web'], serviceEnv({ LOG_LEVEL: 'warn', PROVIDER_URL: 'http://127.0.0.1:9' }));
    other = client(second.url);
  });
  after(() => second.stop());
  beforeEach(async () => {
    await resetDatabase();
    author = await makeUser();
    stranger = await makeUser();
    authorThere = await signAccessToken(serviceEnv().TOKEN_SECRET, author.id, 3600);
    strangerThere = await signAccessToken(serviceEnv().TOKEN_SECRET, stranger.id, 3600);
  });

  const communityIds = async () => ((await other.get('/v1/effects?category=community')).body.items ?? []).map((effect: { id: string }) => effect.id);
  /** A change must reach the second process within a second (a phone reads a moment after the move). */
  const soon = <T>(probe: () => Promise<T>, accept: (value: T) => boolean) => eventually(probe, accept, 1000);

  it('approve lists it in community and on the author page; unpublish, publish again and archive follow at once', async () => {
    // Warm the second process's answers first: a cached empty list must not outlive the change.
    expect((await other.get('/v1/effects?category=community')).status).to.be.oneOf([200, 404]);
    const row = await userEffectIn(author.id, 'approved');
    const effectId = row.effect_id!;
    await soon(communityIds, (ids) => ids.length === 1 && ids[0] === effectId);
    const authorId = (await services().db('effects').where({ id: effectId }).first('author_id')).author_id;
    expect((await other.get(`/v1/authors/${authorId}`)).body.effects.items.map((effect: { id: string }) => effect.id)).to.deep.equal([effectId]);
    expect((await other.get(`/v1/effects/${effectId}`, { token: strangerThere })).status).to.equal(200);

    expect((await handle.api.post(`/v1/user-effects/${row.id}/unpublish`, {}, { token: author.token })).status).to.equal(200);
    await soon(communityIds, (ids) => ids.length === 0);
    await soon(() => other.get(`/v1/effects/${effectId}`, { token: strangerThere }), (answer) => answer.status === 404);
    expectError(await other.get(`/v1/authors/${authorId}`), 404, 'not_found');
    // Its author still opens it: a layer of their own, never part of the shared answer.
    const own = await other.get(`/v1/effects/${effectId}`, { token: authorThere });
    expect(own.status).to.equal(200);
    expect(own.body).to.include({ id: effectId, author_id: authorId });
    expectError(await other.get(`/v1/effects/${effectId}`), 404, 'not_found');
    expectError(await other.get(`/v1/effects/${effectId}`, { token: strangerThere }), 404, 'not_found');

    expect((await handle.api.post(`/v1/user-effects/${row.id}/publish`, {}, { token: author.token })).status).to.equal(200);
    expect(await communityIds()).to.deep.equal([]);
    // The second round's verdict, then the media role's move (its preview exists from the first round).
    await services().db.transaction(async (trx) => {
      await trx('user_effects').where({ id: row.id }).update({ verdict: 'approved' });
      expect(await approveUserEffect(trx, { userEffectId: row.id, round: 2 }, services().config.marketplace.userEffectRuns)).to.not.equal(null);
    });
    await soon(communityIds, (ids) => ids.length === 1);
    expect((await other.get(`/v1/effects/${effectId}`, { token: strangerThere })).status).to.equal(200);

    expect((await handle.api.delete(`/v1/user-effects/${row.id}`, { token: author.token })).status).to.equal(204);
    await soon(communityIds, (ids) => ids.length === 0);
    expectError(await other.get(`/v1/effects/${effectId}`, { token: authorThere }), 404, 'not_found');
  });

  it('a private one never appears in lists, counts, tags or search, for anyone', async () => {
    await userEffectIn(author.id, 'approved');
    const hidden = await userEffectIn(author.id, 'private');
    await soon(communityIds, (ids) => ids.length === 1);
    for (const token of [authorThere, strangerThere, undefined]) {
      const listed = await other.get('/v1/effects', { token });
      expect(listed.body.items.map((effect: { id: string }) => effect.id)).to.not.include(hidden.effect_id);
      const found = await other.get(`/v1/effects?search=${encodeURIComponent('Effect private')}`, { token });
      expect(found.body.items.map((effect: { id: string }) => effect.id)).to.not.include(hidden.effect_id);
    }
    const community = (await other.get('/v1/categories')).body.find((category: { slug: string }) => category.slug === 'community');
    expect(community.effect_count).to.equal(1);
  });
});
