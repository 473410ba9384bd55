import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { approveUserEffect } from '../../../db/user-effects/approve-user-effect';
import { keepPrivate } from '../../../db/user-effects/keep-private';
import { rejectUserEffect } from '../../../db/user-effects/reject-user-effect';
import { openSse, type SseConnection } from '../../../scripts/loadtest/sse-client';
import { expectError } from '../../accounts';
import { photo, storedUpload } from '../../generation-fixtures';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { earningOf, submission, userEffectIn } from '../../user-effect-fixtures';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobDataOf, jobsOf } from '../../jobs';

const every: [string, string][] = [
  ['GET', '/v1/user-effects'],
  ['POST', '/v1/user-effects'],
  ['GET', '/v1/user-effects/account'],
  ['GET', '/v1/user-effects/earnings'],
  ['GET', `/v1/user-effects/${randomUUID()}`],
  ['DELETE', `/v1/user-effects/${randomUUID()}`],
  ['POST', `/v1/user-effects/${randomUUID()}/publish`],
  ['POST', `/v1/user-effects/${randomUUID()}/unpublish`],
  ['GET', `/v1/user-effects/${randomUUID()}/stream`],
];

const hour = 3_600_000;

describe('/v1/user-effects', function () {
  this.timeout(30_000);
  const handle = useTestApp({ config: { STREAM_CAP_PER_USER: '2' } });
  const open: SseConnection[] = [];
  let author: TestUser;

  beforeEach(async () => {
    await resetDatabase();
    author = await makeUser();
  });
  afterEach(() => {
    for (const connection of open.splice(0)) connection.destroy();
  });

  describe('access', () => {
    for (const [method, path] of every) {
      it(`${method} ${path.replace(/[0-9a-f-]{36}/, '{id}')}: a guest gets 403 registration_required, no token 401`, async () => {
        const visitor = await makeUser({ guest: true });
        const body = method === 'POST' ? {} : undefined;
        expectError(await handle.api.request(method, path, body, { token: visitor.token }), 403, 'registration_required');
        expectError(await handle.api.request(method, path, body), 401, 'auth_required');
      });
    }

    it('another user\'s user effect is 404 on every path that names one', async () => {
      const mine = await userEffectIn(author.id, 'approved');
      const stranger = await makeUser();
      for (const [method, path] of [['GET', ''], ['DELETE', ''], ['POST', '/publish'], ['POST', '/unpublish'], ['GET', '/stream']]) {
        expectError(await handle.api.request(method, `/v1/user-effects/${mine.id}${path}`, method === 'POST' ? {} : undefined, { token: stranger.token }), 404, 'not_found');
      }
      for (const id of [randomUUID(), 'not-a-uuid']) expectError(await handle.api.get(`/v1/user-effects/${id}`, { token: author.token }), 404, 'not_found');
      expect((await services().db('user_effects').where({ id: mine.id }).first()).status).to.equal('approved');
    });
  });

  describe('POST /v1/user-effects', () => {
    it('answers 202 with the UserEffect in processing, the server\'s cost and the defaults, and queues its moderation', async () => {
      const body = await submission(author.id, { description: undefined });
      const answer = await handle.api.post('/v1/user-effects', body, { token: author.token });
      expect(answer.status, answer.text).to.equal(202);
      expect(answer.body).to.include({ status: 'processing', visibility: 'public', effect_id: null, name: 'Neon portrait', description: '', output_type: 'image', cost: 10, preview: null, rejection_reason: null });
      expect(answer.body.characters).to.deep.equal([{ min_photos: 1, max_photos: 1 }]);
      expect(await jobDataOf('user-effect-moderation')).to.deep.equal([{ userEffectId: answer.body.id, round: 1 }]);
      const video = await handle.api.post('/v1/user-effects', await submission(author.id, { output_type: 'video', visibility: 'private' }), { token: author.token });
      expect(video.body).to.include({ cost: 40, visibility: 'private' });
    });

    it('refuses a bad body with 422 and changes nothing', async () => {
      const good = await submission(author.id);
      const bad = [
        { ...good, name: '' }, { ...good, name: 'x'.repeat(121) }, { ...good, prompt: undefined }, { ...good, prompt: 'x'.repeat(2001) },
        { ...good, description: 'x'.repeat(1001) }, { ...good, output_type: 'text' }, { ...good, visibility: 'friends' },
        { ...good, characters: [] }, { ...good, characters: [{ min_photos: 0, max_photos: 1 }] }, { ...good, characters: [{ min_photos: 2, max_photos: 1 }] },
        { ...good, sample_upload_id: undefined },
      ];
      for (const body of bad) expectError(await handle.api.post('/v1/user-effects', body, { token: author.token }), 422, 'validation_error');
      expect(await services().db('user_effects').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    it('a sample upload that is absent or another\'s is 404, one never completed is 422', async () => {
      const stranger = await makeUser();
      for (const id of [randomUUID(), await storedUpload(stranger.id, await photo())]) {
        expectError(await handle.api.post('/v1/user-effects', await submission(author.id, { sample_upload_id: id }), { token: author.token }), 404, 'not_found');
      }
      const pending = await storedUpload(author.id, null);
      expectError(await handle.api.post('/v1/user-effects', await submission(author.id, { sample_upload_id: pending }), { token: author.token }), 422, 'validation_error');
    });
  });

  describe('submission limits', () => {
    it('a fourth waiting for moderation is 429 without Retry-After; a moderated one frees its place', async () => {
      const ids: string[] = [];
      for (let index = 0; index < 3; index += 1) ids.push((await handle.api.post('/v1/user-effects', await submission(author.id), { token: author.token })).body.id);
      const refused = await handle.api.post('/v1/user-effects', await submission(author.id), { token: author.token });
      expectError(refused, 429, 'rate_limited');
      expect(refused.headers.get('retry-after')).to.equal(null);
      await services().db('user_effects').where({ id: ids[0] }).update({ status: 'private' });
      expect((await handle.api.post('/v1/user-effects', await submission(author.id), { token: author.token })).status).to.equal(202);
    });

    it('after a rejection, a cooldown of 600 s: 429 with Retry-After, also on publish; over after it', async () => {
      const rejected = await userEffectIn(author.id, 'rejected', { rejectedAt: new Date(Date.now() - 100_000) });
      const refused = await handle.api.post('/v1/user-effects', await submission(author.id), { token: author.token });
      expectError(refused, 429, 'rate_limited');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(498, 501);
      const hidden = await userEffectIn(author.id, 'private');
      const publish = await handle.api.post(`/v1/user-effects/${hidden.id}/publish`, {}, { token: author.token });
      expectError(publish, 429, 'rate_limited');
      expect(Number(publish.headers.get('retry-after'))).to.be.within(498, 501);
      await services().db('user_effects').where({ id: rejected.id }).update({ rejected_at: new Date(Date.now() - 601_000) });
      expect((await handle.api.post('/v1/user-effects', await submission(author.id), { token: author.token })).status).to.equal(202);
    });

    it('3 rejections within 24 h lock submissions for 24 h after the third: 429 with Retry-After', async () => {
      for (const hoursAgo of [20, 10, 2]) await userEffectIn(author.id, 'rejected', { rejectedAt: new Date(Date.now() - hoursAgo * hour) });
      const refused = await handle.api.post('/v1/user-effects', await submission(author.id), { token: author.token });
      expectError(refused, 429, 'rate_limited');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(22 * 3600 - 2, 22 * 3600 + 1);
    });

    it('3 rejections spread over more than 24 h lock nothing (past the cooldown)', async () => {
      for (const hoursAgo of [30, 10, 2]) await userEffectIn(author.id, 'rejected', { rejectedAt: new Date(Date.now() - hoursAgo * hour) });
      expect((await handle.api.post('/v1/user-effects', await submission(author.id), { token: author.token })).status).to.equal(202);
    });

    it('the limits hold across web processes: concurrent submissions through two apps never exceed 3 waiting', async () => {
      const second = await startTestApp();
      try {
        const apis = [handle.api, client(second.url)];
        const bodies = await Promise.all(Array.from({ length: 8 }, () => submission(author.id)));
        const answers = await Promise.all(bodies.map((body, index) => apis[index % 2].post('/v1/user-effects', body, { token: author.token })));
        expect(answers.filter((answer) => answer.status === 202)).to.have.length(3);
        expect(answers.filter((answer) => answer.status === 429)).to.have.length(5);
      } finally {
        await second.close();
      }
    });
  });

  describe('moves', () => {
    const move = (id: string, action: 'publish' | 'unpublish', token = author.token) => handle.api.post(`/v1/user-effects/${id}/${action}`, {}, { token });
    const statuses = ['processing', 'approved', 'rejected', 'archived', 'private'] as const;

    for (const status of statuses) {
      it(`publish from ${status}: ${status === 'private' ? '200, processing and public, a new moderation round' : '422 invalid_status'}`, async () => {
        const row = await userEffectIn(author.id, status);
        const answer = await move(row.id, 'publish');
        if (status !== 'private') {
          expectError(answer, 422, 'validation_error');
          expect(answer.body.error.details).to.deep.equal([{ loc: ['path', 'id'], msg: answer.body.error.details[0].msg, type: 'invalid_status' }]);
          expect((await services().db('user_effects').where({ id: row.id }).first()).status).to.equal(status);
          return;
        }
        expect(answer.status, answer.text).to.equal(200);
        expect(answer.body).to.include({ id: row.id, status: 'processing', visibility: 'public', effect_id: row.effect_id });
        expect(await jobDataOf('user-effect-moderation')).to.deep.include({ userEffectId: row.id, round: 2 });
        // Still its author's only while moderated again.
        expect((await services().db('effects').where({ id: row.effect_id }).first()).private_to).to.equal(author.id);
      });

      it(`unpublish from ${status}: ${status === 'approved' ? '200 private, out of the catalog' : '422 invalid_status'}`, async () => {
        const row = await userEffectIn(author.id, status);
        const answer = await move(row.id, 'unpublish');
        if (status !== 'approved') {
          expectError(answer, 422, 'validation_error');
          expect(answer.body.error.details[0]).to.include({ type: 'invalid_status' });
          return;
        }
        expect(answer.status, answer.text).to.equal(200);
        expect(answer.body).to.include({ status: 'private', visibility: 'private' });
        const effect = await services().db('effects').where({ id: row.effect_id }).first();
        expect(effect).to.include({ private_to: author.id, listed: false });
      });

      it(`DELETE from ${status}: ${status === 'archived' ? '422 invalid_status' : '204 archived, hidden, no push'}`, async () => {
        const row = await userEffectIn(author.id, status);
        const answer = await handle.api.delete(`/v1/user-effects/${row.id}`, { token: author.token });
        if (status === 'archived') {
          expectError(answer, 422, 'validation_error');
          return;
        }
        expect(answer.status, answer.text).to.equal(204);
        expect(await services().db('user_effects').where({ id: row.id }).first()).to.include({ status: 'archived', archived_by: 'author' });
        if (row.effect_id) expect(await services().db('effects').where({ id: row.effect_id }).first()).to.include({ hidden: true, listed: false });
        expect(await jobsOf('push-send'), 'the author\'s own removal sends no push').to.deep.equal([]);
      });
    }

    it('the author\'s removal leaves pending earnings pending', async () => {
      const { earningId, userEffectId } = await earningOf(author.id, { settlesInS: 3600 });
      expect((await handle.api.delete(`/v1/user-effects/${userEffectId}`, { token: author.token })).status).to.equal(204);
      expect((await services().db('user_effect_earnings').where({ id: earningId }).first()).status).to.equal('pending');
    });
  });

  describe('reading', () => {
    it('lists the caller\'s own, newest first, paged within the contract\'s bounds', async () => {
      const stranger = await makeUser();
      await userEffectIn(stranger.id, 'approved');
      const ids: string[] = [];
      for (const status of ['approved', 'private', 'rejected'] as const) {
        ids.unshift((await userEffectIn(author.id, status)).id);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const all = await handle.api.get('/v1/user-effects', { token: author.token });
      expect(all.body.items.map((item: { id: string }) => item.id)).to.deep.equal(ids);
      expect(all.body).to.include({ total: 3, limit: 20, offset: 0 });
      expect(all.body.items[0].preview).to.include.keys('thumb', 'card', 'full', 'width', 'height', 'blurhash', 'focus', 'video_focus');
      const second = await handle.api.get('/v1/user-effects?limit=1&offset=1', { token: author.token });
      expect(second.body.items.map((item: { id: string }) => item.id)).to.deep.equal([ids[1]]);
      expect((await handle.api.get('/v1/user-effects?offset=10000', { token: author.token })).body.items).to.deep.equal([]);
      for (const query of ['limit=0', 'limit=101', 'offset=-1', 'offset=10001', 'limit=x']) {
        expectError(await handle.api.get(`/v1/user-effects?${query}`, { token: author.token }), 422, 'validation_error');
        expectError(await handle.api.get(`/v1/user-effects/earnings?${query}`, { token: author.token }), 422, 'validation_error');
      }
      const one = await handle.api.get(`/v1/user-effects/${ids[2]}`, { token: author.token });
      expect(one.body).to.deep.equal(all.body.items[2]);
    });

    it('earnings: newest first with their status and settles_at; the account sums them (no `available`)', async () => {
      const settled = await earningOf(author.id, { amount: 4 });
      await services().db('user_effect_earnings').where({ id: settled.earningId }).update({ status: 'settled' });
      const soon = await earningOf(author.id, { amount: 2, settlesInS: 100, userEffectId: settled.userEffectId });
      await earningOf(author.id, { amount: 8, settlesInS: 200, userEffectId: settled.userEffectId });
      const reversed = await earningOf(author.id, { amount: 16, userEffectId: settled.userEffectId });
      await services().db('user_effect_earnings').where({ id: reversed.earningId }).update({ status: 'reversed' });
      await userEffectIn(author.id, 'rejected');

      const earnings = await handle.api.get('/v1/user-effects/earnings?limit=2', { token: author.token });
      expect(earnings.body).to.include({ total: 4, limit: 2, offset: 0 });
      expect(earnings.body.items[0]).to.have.keys('id', 'user_effect_id', 'effect_id', 'generation_id', 'amount', 'status', 'settles_at', 'created_at');
      expect(earnings.body.items[0]).to.include({ id: reversed.earningId, status: 'reversed', amount: 16 });
      const account = await handle.api.get('/v1/user-effects/account', { token: author.token });
      const next = await services().db('user_effect_earnings').where({ id: soon.earningId }).first('settles_at');
      expect(account.body).to.deep.equal({ effects_total: 2, approved: 1, earned_total: 4, pending: 10, next_settles_at: next.settles_at.toISOString() });
      const newcomer = await makeUser();
      expect((await handle.api.get('/v1/user-effects/account', { token: newcomer.token })).body).to.deep.equal({ effects_total: 0, approved: 0, earned_total: 0, pending: 0, next_settles_at: null });
    });
  });

  describe('GET /v1/user-effects/{id}/stream', () => {
    async function stream(token: string, id: string): Promise<SseConnection> {
      const connection = await openSse(handle.app.url, `/v1/user-effects/${id}/stream`, token);
      open.push(connection);
      return connection;
    }

    it('starts with a snapshot {id, status, effect_id}; a closing status is the only event, then the stream ends', async () => {
      const row = await userEffectIn(author.id, 'approved');
      const connection = await stream(author.token, row.id);
      expect(connection.status).to.equal(200);
      const first = await connection.next();
      expect(first.event).to.equal('status');
      expect(JSON.parse(first.data)).to.deep.equal({ id: row.id, status: 'approved', effect_id: row.effect_id });
      // approved is a closing status: the snapshot is the only event.
      expect(await connection.endsWithin(2000)).to.equal(true);
    });

    for (const closing of ['approved', 'rejected', 'archived', 'private'] as const) {
      it(`closes at ${closing} after following a processing one`, async () => {
        const row = await userEffectIn(author.id, 'processing', { visibility: closing === 'private' ? 'private' : 'public' });
        const connection = await stream(author.token, row.id);
        expect(JSON.parse((await connection.next()).data).status).to.equal('processing');
        const { db } = services();
        if (closing === 'archived') expect((await handle.api.delete(`/v1/user-effects/${row.id}`, { token: author.token })).status).to.equal(204);
        else {
          const move = { approved: approveUserEffect, private: keepPrivate, rejected: rejectUserEffect }[closing];
          await db('user_effects').where({ id: row.id }).update({
            verdict: closing === 'rejected' ? 'rejected' : 'approved', verdict_reason: closing === 'rejected' ? 'content_policy' : null,
            poster_key: 'p.jpg', preview: JSON.stringify({ thumb: 't', card: 'c', full: 'f', animation: null, video: null, width: 1, height: 1, blurhash: null }),
          });
          expect(await db.transaction((trx) => move(trx, { userEffectId: row.id, round: 1 }, services().config.marketplace.userEffectRuns))).to.not.equal(null);
        }
        const last = JSON.parse((await connection.next()).data);
        expect(last).to.include({ id: row.id, status: closing });
        if (closing !== 'archived' && closing !== 'rejected') expect(last.effect_id).to.be.a('string');
        expect(await connection.endsWithin(2000)).to.equal(true);
      });
    }

    it('counts against the per-user cap shared with the other streams: 429 too_many_streams', async () => {
      const rows = await Promise.all([0, 1, 2].map(() => userEffectIn(author.id, 'processing')));
      await stream(author.token, rows[0].id);
      await stream(author.token, rows[1].id);
      const refused = await handle.api.get(`/v1/user-effects/${rows[2].id}/stream`, { token: author.token });
      expectError(refused, 429, 'too_many_streams');
      for (const connection of open.splice(0)) connection.destroy();
      await eventually(async () => (await services().db('stream_leases').where({ user_id: author.id })).length, (count) => count === 0);
    });
  });
});
