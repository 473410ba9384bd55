import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';

describe('push devices: POST /v1/devices, DELETE /v1/devices/{id}', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  it('registers a new token: 201 {id, platform, created_at}, also for a guest', async () => {
    const guest = await makeUser({ guest: true });
    const answer = await t.api.post('/v1/devices', { token: 'apns-token-1', platform: 'ios', device_id: 'install-1' }, { token: guest.token });
    expect(answer.status).to.equal(201);
    expect(Object.keys(answer.body).sort()).to.deep.equal(['created_at', 'id', 'platform']);
    expect(answer.body.platform).to.equal('ios');
    expect(new Date(answer.body.created_at).getTime()).to.be.closeTo(Date.now(), 60_000);
    const stored = await services().db('push_devices').where({ id: answer.body.id }).first();
    expect(stored).to.include({ user_id: guest.id, token: 'apns-token-1', platform: 'ios' });
    // The device id is a key to guest accounts: only its hash is kept.
    expect(stored.device_hash).to.match(/^[0-9a-f]{64}$/);
  });

  it('answers 200 with the same record when the token is already this account\'s', async () => {
    const user = await makeUser();
    const first = await t.api.post('/v1/devices', { token: 'fcm:token-2', platform: 'android' }, { token: user.token });
    const again = await t.api.post('/v1/devices', { token: 'fcm:token-2', platform: 'android' }, { token: user.token });
    expect(first.status).to.equal(201);
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal(first.body);
    expect(await services().db('push_devices').count({ count: '*' })).to.deep.equal([{ count: 1 }]);
  });

  describe('a token registered to another account', () => {
    it('is 403 forbidden without a device_id, or with another one; nothing moves', async () => {
      const owner = await makeUser();
      const other = await makeUser();
      const registered = await t.api.post('/v1/devices', { token: 'shared-token', platform: 'ios', device_id: 'phone-a' }, { token: owner.token });
      for (const body of [{ token: 'shared-token', platform: 'ios' }, { token: 'shared-token', platform: 'ios', device_id: 'phone-b' }]) {
        const answer = await t.api.post('/v1/devices', body, { token: other.token });
        expect(answer.status).to.equal(403);
        expect(answer.body.error.code).to.equal('forbidden');
      }
      const stored = await services().db('push_devices').where({ token: 'shared-token' }).first();
      expect(stored).to.include({ id: registered.body.id, user_id: owner.id });
    });

    it('is 403 when the first registration carried no device_id', async () => {
      const owner = await makeUser();
      const other = await makeUser();
      await t.api.post('/v1/devices', { token: 'shared-token', platform: 'ios' }, { token: owner.token });
      const answer = await t.api.post('/v1/devices', { token: 'shared-token', platform: 'ios', device_id: 'phone-a' }, { token: other.token });
      expect(answer.status).to.equal(403);
    });

    it('moves with the same device_id: 201 for the new account, gone for the old one', async () => {
      const owner = await makeUser();
      const next = await makeUser();
      const old = await t.api.post('/v1/devices', { token: 'shared-token', platform: 'android', device_id: 'phone-a' }, { token: owner.token });
      const moved = await t.api.post('/v1/devices', { token: 'shared-token', platform: 'android', device_id: 'phone-a' }, { token: next.token });
      expect(moved.status).to.equal(201);
      expect(moved.body.id).not.to.equal(old.body.id);
      expect(await services().db('push_devices').where({ token: 'shared-token' }).pluck('user_id')).to.deep.equal([next.id]);
      expect((await t.api.delete(`/v1/devices/${old.body.id}`, { token: owner.token })).status).to.equal(404);
      expect((await t.api.delete(`/v1/devices/${moved.body.id}`, { token: next.token })).status).to.equal(204);
    });
  });

  it('a concurrent double registration of one new token makes one record', async () => {
    const user = await makeUser();
    const answers = await Promise.all([1, 2, 3].map(() => t.api.post('/v1/devices', { token: 'racy-token', platform: 'ios' }, { token: user.token })));
    expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, 200, 201]);
    expect(new Set(answers.map((answer) => answer.body.id)).size).to.equal(1);
  });

  it('validates the body: 422 for a missing token, an unknown platform, a device_id over 255', async () => {
    const user = await makeUser();
    for (const body of [{ platform: 'ios' }, { token: 't', platform: 'windows' }, { token: 't', platform: 'ios', device_id: 'x'.repeat(256) }, { token: 'with space', platform: 'ios' }]) {
      const answer = await t.api.post('/v1/devices', body, { token: user.token });
      expect(answer.status).to.equal(422);
      expect(answer.body.error.code).to.equal('validation_error');
    }
  });

  it('needs a token: 401 auth_required', async () => {
    expect((await t.api.post('/v1/devices', { token: 't', platform: 'ios' })).status).to.equal(401);
    expect((await t.api.delete(`/v1/devices/${randomUUID()}`)).status).to.equal(401);
  });

  it('is built and published: the paths answer, and /v1/openapi.json lists them', async () => {
    const { body } = await t.api.get('/v1/openapi.json');
    expect(body.paths['/v1/devices'].post.responses).to.have.keys('200', '201', '401', '403', '413', '422', '429', '500', '503');
    expect(body.paths['/v1/devices/{id}'].delete.responses).to.include.keys('204', '404');
    expect(body.paths['/v1/generations/{id}/stream'].get.responses['200'].content).to.have.key('text/event-stream');
  });

  it('deletes the caller\'s device: 204, then 404; another account\'s, absent or malformed ids are 404', async () => {
    const owner = await makeUser();
    const stranger = await makeUser();
    const { body } = await t.api.post('/v1/devices', { token: 'to-delete', platform: 'ios' }, { token: owner.token });
    expect((await t.api.delete(`/v1/devices/${body.id}`, { token: stranger.token })).status).to.equal(404);
    expect((await t.api.delete(`/v1/devices/${body.id}`, { token: owner.token })).status).to.equal(204);
    expect((await t.api.delete(`/v1/devices/${body.id}`, { token: owner.token })).status).to.equal(404);
    const malformed = await t.api.delete('/v1/devices/not-a-uuid', { token: owner.token });
    expect(malformed.status).to.equal(404);
    expect(malformed.body.error.code).to.equal('not_found');
  });
});
