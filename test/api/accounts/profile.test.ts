import { expect } from 'chai';
import { expectError, guest, newDeviceId, registered } from '../../accounts';
import { resetDatabase, services, useTestApp } from '../../harness';

describe('profile: /v1/me', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  it('GET answers every User field, balance and the plan credits inside it included', async () => {
    const account = await registered(t.api, { name: 'Mia' });
    const me = await t.api.get('/v1/me', { token: account.body.access_token });
    expect(me.status).to.equal(200);
    expect(me.body).to.deep.equal(account.body.user);
    expect(me.body).to.have.all.keys('id', 'email', 'name', 'locale', 'is_anonymous', 'providers', 'balance', 'plan_credits', 'plan_expires_at', 'avatar_url');
    expect(me.body).to.include({ plan_credits: 0, plan_expires_at: null });
  });

  it('GET needs a token', async () => {
    expectError(await t.api.get('/v1/me'), 401, 'auth_required');
  });

  describe('PATCH', () => {
    it('changes the name and the locale, dropping a region suffix (en-US becomes en)', async () => {
      const account = await registered(t.api);
      const token = account.body.access_token;
      const answer = await t.api.patch('/v1/me', { name: 'New Name', locale: 'en-US' }, { token });
      expect(answer.status).to.equal(200);
      expect(answer.body).to.include({ name: 'New Name', locale: 'en' });
      expect((await t.api.patch('/v1/me', { locale: 'RU_ru' }, { token })).body.locale).to.equal('ru');
      expect((await t.api.get('/v1/me', { token })).body).to.include({ name: 'New Name', locale: 'ru' });
    });

    it('answers 422 naming locale for an unsupported one, changing nothing', async () => {
      const account = await registered(t.api, { name: 'Kept' });
      const token = account.body.access_token;
      for (const locale of ['de', 'de-DE', '', 'english']) {
        const answer = await t.api.patch('/v1/me', { name: 'Not Applied', locale }, { token });
        expectError(answer, 422, 'validation_error');
        expect(answer.body.error.details[0].loc).to.deep.equal(['body', 'locale']);
      }
      expect((await t.api.get('/v1/me', { token })).body).to.include({ name: 'Kept', locale: 'ru' });
    });

    it('limits the name to 120 characters and clears it with null', async () => {
      const account = await registered(t.api, { name: 'Someone' });
      const token = account.body.access_token;
      expectError(await t.api.patch('/v1/me', { name: 'n'.repeat(121) }, { token }), 422, 'validation_error');
      expect((await t.api.patch('/v1/me', { name: 'n'.repeat(120) }, { token })).status).to.equal(200);
      expect((await t.api.patch('/v1/me', { name: null }, { token })).body.name).to.equal(null);
    });

    it('is open to a guest', async () => {
      const first = await guest(t.api);
      const answer = await t.api.patch('/v1/me', { locale: 'en' }, { token: first.body.access_token });
      expect(answer.body).to.include({ locale: 'en', is_anonymous: true });
    });
  });

  describe('DELETE', () => {
    async function putFiles(userId: string): Promise<string[]> {
      const keys = [`avatars/${userId}/a.jpg`, `uploads/${userId}/u.jpg`, `uploads/${userId}/nested/v.png`, `results/${userId}/r.mp4`, `previews/${userId}/g/thumb.webp`];
      for (const key of keys) await services().storage.put(key, Buffer.from('data'), 'application/octet-stream');
      return keys;
    }

    it('answers 204 and removes the account with its identities, sessions, devices and credits', async () => {
      const deviceId = newDeviceId();
      const account = await registered(t.api, { device_id: deviceId });
      const { id } = account.body.user;
      await services().db('identities').insert({ user_id: id, provider: 'idp_c', subject: 'c-1' });
      expect((await t.api.delete('/v1/me', { token: account.body.access_token })).status).to.equal(204);
      const { db } = services();
      for (const table of ['users', 'identities', 'refresh_tokens', 'user_devices', 'credit_transactions']) {
        expect(await db(table).count('* as count').first(), table).to.deep.equal({ count: 0 });
      }
      expectError(await t.api.get('/v1/me', { token: account.body.access_token }), 401, 'auth_required');
    });

    it("erases every file of the user from storage and no one else's", async () => {
      const account = await registered(t.api);
      const other = await registered(t.api);
      const mine = await putFiles(account.body.user.id);
      const theirs = await putFiles(other.body.user.id);
      expect((await t.api.delete('/v1/me', { token: account.body.access_token })).status).to.equal(204);
      for (const key of mine) expect(await services().storage.stat(key), key).to.equal(null);
      for (const key of theirs) expect(await services().storage.stat(key), key).not.to.equal(null);
    });

    it('frees the email: it can be registered again as a new account', async () => {
      const account = await registered(t.api);
      await t.api.delete('/v1/me', { token: account.body.access_token });
      const again = await registered(t.api, { email: account.body.user.email });
      expect(again.body.user.id).not.to.equal(account.body.user.id);
    });

    it('is open to a guest', async () => {
      const first = await guest(t.api);
      expect((await t.api.delete('/v1/me', { token: first.body.access_token })).status).to.equal(204);
    });
  });
});
