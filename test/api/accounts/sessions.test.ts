import { expect } from 'chai';
import { hashRefreshToken } from '../../../db/accounts/refresh-tokens';
import { expectError, guest, newDeviceId, newEmail, password, registered } from '../../accounts';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { makeUser } from '../../users';

describe('sessions: refresh, logout, change-password', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  const refresh = (refreshToken: string, deviceId?: string) =>
    t.api.post('/v1/auth/refresh', { refresh_token: refreshToken, ...(deviceId ? { device_id: deviceId } : {}) });

  describe('refresh tokens', () => {
    it('are at least 128 random bits and stored only as their SHA-256', async () => {
      const answer = await registered(t.api);
      const token: string = answer.body.refresh_token;
      expect(Buffer.from(token, 'base64url').length).to.be.at.least(16);
      const rows = await services().db('refresh_tokens').select('token_hash');
      expect(rows).to.deep.equal([{ token_hash: hashRefreshToken(token) }]);
      expect(JSON.stringify(rows)).not.to.contain(token);
    });

    it('rotate on every use: the new pair works, the old refresh token is superseded', async () => {
      const first = await registered(t.api);
      const second = await refresh(first.body.refresh_token);
      expect(second.status).to.equal(200);
      expect(second.body.user.id).to.equal(first.body.user.id);
      expect(second.body.expires_in).to.equal(900);
      expect(second.body.refresh_token).not.to.equal(first.body.refresh_token);
      expect((await t.api.get('/v1/me', { token: second.body.access_token })).status).to.equal(200);
      const states = await services().db('refresh_tokens').orderBy('created_at').select('state', 'family_id');
      expect(states.map((row) => row.state)).to.deep.equal(['superseded', 'active']);
      expect(states[0].family_id).to.equal(states[1].family_id);
    });

    it('a superseded token presented again revokes every token of the user, newer ones included', async () => {
      const first = await registered(t.api);
      const elsewhere = await t.api.post('/v1/auth/login', { email: first.body.user.email, password, device_id: newDeviceId() });
      const second = await refresh(first.body.refresh_token);
      expectError(await refresh(first.body.refresh_token), 401, 'auth_required');
      expectError(await refresh(second.body.refresh_token), 401, 'auth_required');
      expectError(await refresh(elsewhere.body.refresh_token), 401, 'auth_required');
    });

    it('lets exactly one of two concurrent refreshes with one token win; the loser revokes all', async () => {
      const first = await registered(t.api);
      const answers = await Promise.all([refresh(first.body.refresh_token), refresh(first.body.refresh_token)]);
      expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, 401]);
      const winner = answers.find((answer) => answer.status === 200)!;
      expectError(await refresh(winner.body.refresh_token), 401, 'auth_required');
    });

    it('answers 401 for an unknown, an expired or a revoked token, without revoking others', async () => {
      const first = await registered(t.api);
      const second = await t.api.post('/v1/auth/login', { email: first.body.user.email, password });
      expectError(await refresh('no-such-token'), 401, 'auth_required');
      await services().db('refresh_tokens').where({ token_hash: hashRefreshToken(first.body.refresh_token) }).update({ expires_at: new Date(Date.now() - 1000) });
      expectError(await refresh(first.body.refresh_token), 401, 'auth_required');
      expect((await refresh(second.body.refresh_token)).status).to.equal(200);
    });

    it('expire after REFRESH_TOKEN_TTL_S', async () => {
      const custom = await startTestApp({ config: { REFRESH_TOKEN_TTL_S: '1' } });
      try {
        const customApi = client(custom.url);
        const answer = await customApi.post('/v1/auth/register', { email: newEmail(), password });
        await new Promise((resolve) => setTimeout(resolve, 1100));
        expectError(await customApi.post('/v1/auth/refresh', { refresh_token: answer.body.refresh_token }), 401, 'auth_required');
      } finally {
        await custom.close();
      }
    });

    it('are bound to their device: another device_id is refused, none is accepted', async () => {
      const deviceId = newDeviceId();
      const first = await registered(t.api, { device_id: deviceId });
      expectError(await refresh(first.body.refresh_token, newDeviceId()), 401, 'auth_required');
      const second = await refresh(first.body.refresh_token);
      expect(second.status).to.equal(200);
      const third = await refresh(second.body.refresh_token, deviceId);
      expect(third.status, 'the device binding carries over to the next token').to.equal(200);
      expectError(await refresh(third.body.refresh_token, newDeviceId()), 401, 'auth_required');
    });

    it("stop working when the user is deleted; the deleted user's access token answers 401", async () => {
      const first = await registered(t.api);
      expect((await t.api.delete('/v1/me', { token: first.body.access_token })).status).to.equal(204);
      expectError(await refresh(first.body.refresh_token), 401, 'auth_required');
      expectError(await t.api.get('/v1/me', { token: first.body.access_token }), 401, 'auth_required');
    });

    it('validates the body', async () => {
      expectError(await t.api.post('/v1/auth/refresh', {}), 422, 'validation_error');
      expectError(await t.api.post('/v1/auth/refresh', { refresh_token: '' }), 422, 'validation_error');
    });
  });

  describe('POST /v1/auth/logout', () => {
    it('revokes only the passed refresh token and answers 204', async () => {
      const first = await registered(t.api);
      const other = await t.api.post('/v1/auth/login', { email: first.body.user.email, password });
      const answer = await t.api.post('/v1/auth/logout', { refresh_token: first.body.refresh_token }, { token: first.body.access_token });
      expect(answer.status).to.equal(204);
      expectError(await refresh(first.body.refresh_token), 401, 'auth_required');
      expect((await refresh(other.body.refresh_token)).status).to.equal(200);
      expect((await t.api.get('/v1/me', { token: first.body.access_token })).status, 'the access token lives out its lifetime').to.equal(200);
    });

    it("cannot revoke another user's token", async () => {
      const first = await registered(t.api);
      const second = await registered(t.api);
      expect((await t.api.post('/v1/auth/logout', { refresh_token: second.body.refresh_token }, { token: first.body.access_token })).status).to.equal(204);
      expect((await refresh(second.body.refresh_token)).status).to.equal(200);
    });

    it('needs an access token', async () => {
      const first = await registered(t.api);
      expectError(await t.api.post('/v1/auth/logout', { refresh_token: first.body.refresh_token }), 401, 'auth_required');
    });
  });

  describe('POST /v1/auth/change-password', () => {
    const change = (token: string, body: Record<string, unknown>) => t.api.post('/v1/auth/change-password', body, { token });

    it('rule 1: an email account needs the correct current_password, else 401 invalid_credentials', async () => {
      const first = await registered(t.api);
      expectError(await change(first.body.access_token, { new_password: 'a brand new one' }), 401, 'invalid_credentials');
      expectError(await change(first.body.access_token, { current_password: 'wrong password', new_password: 'a brand new one' }), 401, 'invalid_credentials');
      expect((await refresh(first.body.refresh_token)).status, 'nothing was revoked').to.equal(200);
    });

    it('rule 2: an account with an email and no password may set one without current_password', async () => {
      const email = newEmail();
      const { token } = await makeUser({ email });
      const answer = await change(token, { new_password: 'first password' });
      expect(answer.status).to.equal(200);
      expect(answer.body.user.providers).to.deep.equal(['email']);
      expect((await t.api.post('/v1/auth/login', { email, password: 'first password' })).status).to.equal(200);
    });

    it('rule 3: an account without email gets 403 forbidden and keeps its sessions', async () => {
      const user = await makeUser();
      const { token } = user;
      await services().db('refresh_tokens').insert({ user_id: user.id, token_hash: 'h', family_id: user.id, expires_at: new Date(Date.now() + 60_000) });
      expectError(await change(token, { new_password: 'some password' }), 403, 'forbidden');
      expect(await services().db('refresh_tokens').where({ user_id: user.id }).first('state')).to.deep.equal({ state: 'active' });
    });

    it('rule 4: a guest gets 403 registration_required', async () => {
      const first = await guest(t.api);
      expectError(await change(first.body.access_token, { new_password: 'some password' }), 403, 'registration_required');
    });

    it('rule 5: success revokes every refresh token and answers a fresh pair for this device', async () => {
      const deviceId = newDeviceId();
      const first = await registered(t.api, { device_id: deviceId });
      const other = await t.api.post('/v1/auth/login', { email: first.body.user.email, password, device_id: newDeviceId() });
      const answer = await change(first.body.access_token, { current_password: password, new_password: 'a brand new one', device_id: deviceId });
      expect(answer.status).to.equal(200);
      expect(answer.body.user.id).to.equal(first.body.user.id);
      expectError(await refresh(first.body.refresh_token), 401, 'auth_required');
      expectError(await refresh(other.body.refresh_token), 401, 'auth_required');
      expectError(await refresh(answer.body.refresh_token, newDeviceId()), 401, 'auth_required');
      expect((await refresh(answer.body.refresh_token, deviceId)).status).to.equal(200);
      expectError(await t.api.post('/v1/auth/login', { email: first.body.user.email, password }), 401, 'invalid_credentials');
      expect((await t.api.post('/v1/auth/login', { email: first.body.user.email, password: 'a brand new one' })).status).to.equal(200);
    });

    it('validates new_password (8..128) before anything else', async () => {
      const first = await registered(t.api);
      expectError(await change(first.body.access_token, { current_password: password, new_password: 'short' }), 422, 'validation_error');
      expectError(await change(first.body.access_token, { current_password: password }), 422, 'validation_error');
    });

    it('needs an access token', async () => {
      expectError(await t.api.post('/v1/auth/change-password', { new_password: 'some password' }), 401, 'auth_required');
    });
  });
});
