import { expect } from 'chai';
import nock from 'nock';
import { revokeIdpBGrant } from '../../../workers/accounts/revoke-idp-b';
import { expectError, expectLedgerConsistent, guest, newEmail, registered, transactionsOf, type Api } from '../../accounts';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { testSigner, type TestSigner } from './identity-tokens';
import { jobsOf } from '../../jobs';

const idpConfig = {
  IDP_A_ISSUER: 'https://idp-a.test',
  IDP_A_AUDIENCE: 'app.one,app.two',
  IDP_A_JWKS_URL: 'https://idp-a.test/jwks',
  IDP_B_ISSUER: 'https://idp-b.test',
  IDP_B_AUDIENCE: 'svc.b',
  IDP_B_JWKS_URL: 'https://idp-b.test/keys',
  IDP_B_TOKEN_URL: 'https://idp-b.test/token',
  IDP_B_REVOKE_URL: 'https://idp-b.test/revoke',
  IDP_B_CLIENT_ID: 'svc.b',
  IDP_B_CLIENT_SECRET: 'secret-b',
  IDP_C_USERINFO_URL: 'https://idp-c.test/userinfo',
  IDP_D_USERINFO_URL: 'https://idp-d.test/me',
  IDP_D_CLIENT_ID: 'our-app',
  IDP_TIMEOUT_MS: '300',
};

describe('identity providers (provider answers from nock)', () => {
  let app: TestApp;
  let api: Api;
  let idpA: TestSigner;
  let idpB: TestSigner;

  before(async () => {
    nock.disableNetConnect();
    nock.enableNetConnect((host) => host.startsWith('127.0.0.1') || host.startsWith('localhost'));
    idpA = await testSigner('https://idp-a.test', 'app.one');
    idpB = await testSigner('https://idp-b.test', 'svc.b', 'ES256');
    app = await startTestApp({ config: idpConfig });
    api = client(app.url);
  });
  beforeEach(async () => {
    await resetDatabase();
    // The service caches provider keys; these answers stay for whenever it fetches them.
    nock('https://idp-a.test').persist().get('/jwks').reply(200, () => idpA.jwks);
    nock('https://idp-b.test').persist().get('/keys').reply(200, () => idpB.jwks);
  });
  afterEach(async () => {
    nock.cleanAll();
    await expectLedgerConsistent();
  });
  after(async () => {
    nock.enableNetConnect();
    await app.close();
  });

  const userinfoC = () => nock('https://idp-c.test').get('/userinfo');
  const userinfoD = () => nock('https://idp-d.test').get('/me');

  describe('idp_a (id_token)', () => {
    it('creates an account with 200 (not 201), welcome credits, the verified email and the name', async () => {
      const email = newEmail();
      const idToken = await idpA.sign({ sub: 'a-1', email, email_verified: true, name: 'Alice A' });
      const answer = await api.post('/v1/auth/idp_a', { id_token: idToken });
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.user).to.deep.include({ email, name: 'Alice A', is_anonymous: false, providers: ['idp_a'], balance: 50 });
      expect(answer.body).to.have.all.keys('access_token', 'refresh_token', 'expires_in', 'user');
    });

    it('signs a known identity in to its account again, without new credits', async () => {
      const idToken = await idpA.sign({ sub: 'a-1' });
      const first = await api.post('/v1/auth/idp_a', { id_token: idToken });
      const second = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'a-1', name: 'Changed Name' }) });
      expect(second.body.user).to.deep.include({ id: first.body.user.id, balance: 50, name: null });
    });

    it('links to the account with the same email when email_verified is "true" (a string): no welcome credits', async () => {
      const email = newEmail();
      const account = await registered(api, { email });
      const answer = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'a-2', email: email.toUpperCase(), email_verified: 'true' }) });
      expect(answer.status).to.equal(200);
      expect(answer.body.user).to.deep.include({ id: account.body.user.id, balance: 50, providers: ['email', 'idp_a'] });
    });

    it('does not link an unverified email: a separate account without email', async () => {
      const email = newEmail();
      const account = await registered(api, { email });
      const answer = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'a-3', email, email_verified: 'false' }) });
      expect(answer.body.user.id).not.to.equal(account.body.user.id);
      expect(answer.body.user.email).to.equal(null);
    });

    it('accepts any configured audience', async () => {
      const answer = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'a-4' }, { audience: 'app.two' }) });
      expect(answer.status).to.equal(200);
    });

    it('rejects a wrong issuer, a foreign audience, an expired token, a foreign key and a token without sub with 401', async () => {
      const stranger = await testSigner('https://idp-a.test', 'app.one');
      const tokens = [
        await idpA.sign({ sub: 'a-5' }, { issuer: 'https://evil.test' }),
        await idpA.sign({ sub: 'a-5' }, { audience: 'someone.else' }),
        await idpA.sign({ sub: 'a-5' }, { expiresInS: -60 }),
        await stranger.sign({ sub: 'a-5' }, { kid: idpA.jwks.keys[0].kid }),
        await idpA.sign({}),
      ];
      for (const idToken of tokens) expectError(await api.post('/v1/auth/idp_a', { id_token: idToken }), 401, 'invalid_credentials');
      expect(await services().db('users').count('* as count').first()).to.deep.equal({ count: 0 });
    });

    it('answers 422 for an empty, malformed or over-long id_token', async () => {
      for (const idToken of ['', 'not-a-jwt', `a.b.${'c'.repeat(4096)}`, 42]) {
        expectError(await api.post('/v1/auth/idp_a', { id_token: idToken }), 422, 'validation_error');
      }
      expectError(await api.post('/v1/auth/idp_a', {}), 422, 'validation_error');
    });
  });

  describe('idp_b (id_token and authorization_code)', () => {
    it('exchanges the code by a form POST and keeps the refresh token sealed', async () => {
      const token = nock('https://idp-b.test')
        .post('/token', { grant_type: 'authorization_code', code: 'code-1', client_id: 'svc.b', client_secret: 'secret-b' })
        .matchHeader('content-type', 'application/x-www-form-urlencoded')
        .reply(200, { access_token: 'at', refresh_token: 'refresh-at-idp-b', id_token: 'x' });
      const answer = await api.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'b-1' }), authorization_code: 'code-1' });
      expect(answer.status, answer.text).to.equal(200);
      token.done();
      const identity = await services().db('identities').where({ provider: 'idp_b' }).first('sealed_refresh_token');
      expect(identity.sealed_refresh_token).to.be.a('string').and.not.contain('refresh-at-idp-b');
    });

    it('signs in without a code, keeping nothing to revoke', async () => {
      const answer = await api.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'b-2' }) });
      expect(answer.status).to.equal(200);
      expect(answer.body.user.providers).to.deep.equal(['idp_b']);
      expect(await services().db('identities').first('sealed_refresh_token')).to.deep.equal({ sealed_refresh_token: null });
    });

    it('answers 401 for a code the provider rejects and 503 when its token endpoint fails', async () => {
      nock('https://idp-b.test').post('/token').reply(400, { error: 'invalid_grant' });
      expectError(await api.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'b-3' }), authorization_code: 'used' }), 401, 'invalid_credentials');
      nock('https://idp-b.test').post('/token').reply(502, 'bad gateway');
      expectError(await api.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'b-3' }), authorization_code: 'code' }), 503, 'provider_unavailable');
      expect(await services().db('users').count('* as count').first()).to.deep.equal({ count: 0 });
    });

    it('revokes the kept refresh token in a background job after DELETE /v1/me', async () => {
      nock('https://idp-b.test').post('/token').reply(200, { refresh_token: 'refresh-to-revoke' });
      const answer = await api.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'b-4' }), authorization_code: 'code-4' });
      const revoke = nock('https://idp-b.test')
        .post('/revoke', { token: 'refresh-to-revoke', token_type_hint: 'refresh_token', client_id: 'svc.b', client_secret: 'secret-b' })
        .reply(200);
      expect((await api.delete('/v1/me', { token: answer.body.access_token })).status).to.equal(204);
      expect(revoke.isDone(), 'the deletion does not wait for the provider').to.equal(false);
      const [job] = await jobsOf('revoke-idp-b');
      await revokeIdpBGrant(app.services, job.data);
      revoke.done();
    });
  });

  describe('idp_c (access_token, userinfo)', () => {
    it('creates an account without email even when the provider sends one, named from the profile', async () => {
      const scope = userinfoC().matchHeader('authorization', 'Bearer token-c1').reply(200, { sub: 'c-1', name: 'Carol C', email: 'carol@example.com' });
      const answer = await api.post('/v1/auth/idp_c', { access_token: 'token-c1' });
      scope.done();
      expect(answer.status).to.equal(200);
      expect(answer.body.user).to.deep.include({ email: null, name: 'Carol C', providers: ['btn_1'], balance: 50 });
    });

    it('never links by email, even to an account with that email', async () => {
      const email = newEmail();
      const account = await registered(api, { email });
      userinfoC().reply(200, { sub: 'c-2', email });
      const answer = await api.post('/v1/auth/idp_c', { access_token: 'token-c2' });
      expect(answer.body.user.id).not.to.equal(account.body.user.id);
    });

    it('shows the button of the last sign-in in providers', async () => {
      userinfoC().reply(200, { sub: 'c-3' });
      const first = await api.post('/v1/auth/idp_c', { access_token: 'token-c3', oauth_provider: 'btn_2' });
      expect(first.body.user.providers).to.deep.equal(['btn_2']);
      userinfoC().reply(200, { sub: 'c-3' });
      const second = await api.post('/v1/auth/idp_c', { access_token: 'token-c3', oauth_provider: 'btn_3' });
      expect(second.body.user.providers).to.deep.equal(['btn_3']);
    });

    it("never changes an existing account's name", async () => {
      userinfoC().reply(200, { sub: 'c-4', name: 'First Name' });
      await api.post('/v1/auth/idp_c', { access_token: 'token-c4' });
      userinfoC().reply(200, { sub: 'c-4', name: 'Second Name' });
      const answer = await api.post('/v1/auth/idp_c', { access_token: 'token-c4' });
      expect(answer.body.user.name).to.equal('First Name');
    });

    it('answers 401 invalid_credentials when the provider answers 401 or 403', async () => {
      for (const status of [401, 403]) {
        userinfoC().reply(status, { error: 'invalid_token' });
        expectError(await api.post('/v1/auth/idp_c', { access_token: 'bad' }), 401, 'invalid_credentials');
      }
    });

    it('answers 503 provider_unavailable on a 5xx, a timeout or a network error', async () => {
      userinfoC().reply(500, 'oops');
      expectError(await api.post('/v1/auth/idp_c', { access_token: 'tok' }), 503, 'provider_unavailable');
      userinfoC().delay(1000).reply(200, { sub: 'late' });
      const started = Date.now();
      expectError(await api.post('/v1/auth/idp_c', { access_token: 'tok' }), 503, 'provider_unavailable');
      expect(Date.now() - started).to.be.below(900);
      userinfoC().replyWithError('connection reset');
      expectError(await api.post('/v1/auth/idp_c', { access_token: 'tok' }), 503, 'provider_unavailable');
      expect(await services().db('users').count('* as count').first()).to.deep.equal({ count: 0 });
    });

    it('answers 422 for an unknown oauth_provider and for a token that is empty, has spaces or is over 4096 characters', async () => {
      for (const body of [
        { access_token: 'tok', oauth_provider: 'btn_4' },
        { access_token: '' },
        { access_token: 'with space' },
        { access_token: 'x'.repeat(4097) },
        { access_token: 'caf\u00e9' },
      ]) {
        expectError(await api.post('/v1/auth/idp_c', body), 422, 'validation_error');
      }
    });

    it('accepts a token of exactly 4096 printable characters', async () => {
      userinfoC().reply(200, { sub: 'c-5' });
      expect((await api.post('/v1/auth/idp_c', { access_token: '~'.repeat(4096) })).status).to.equal(200);
    });
  });

  describe('idp_d (access_token, userinfo with client_id)', () => {
    it("answers 401 for a token issued to another application", async () => {
      userinfoD().reply(200, { sub: 'd-1', client_id: 'other-app' });
      expectError(await api.post('/v1/auth/idp_d', { access_token: 'tok' }), 401, 'invalid_credentials');
      userinfoD().reply(200, { sub: 'd-1' });
      expectError(await api.post('/v1/auth/idp_d', { access_token: 'tok' }), 401, 'invalid_credentials');
    });

    it('creates an account named from the profile with its primary email', async () => {
      const email = newEmail();
      userinfoD().matchHeader('authorization', 'Bearer tok-d').reply(200, { sub: 'd-2', client_id: 'our-app', name: 'Dan D', email });
      const answer = await api.post('/v1/auth/idp_d', { access_token: 'tok-d' });
      expect(answer.status).to.equal(200);
      expect(answer.body.user).to.deep.include({ email, name: 'Dan D', providers: ['idp_d'], balance: 50 });
    });

    it('links by the primary email to an existing account, keeping its name', async () => {
      const email = newEmail();
      const account = await registered(api, { email, name: 'Own Name' });
      userinfoD().reply(200, { sub: 'd-3', client_id: 'our-app', name: 'Provider Name', email });
      const answer = await api.post('/v1/auth/idp_d', { access_token: 'tok' });
      expect(answer.body.user).to.deep.include({ id: account.body.user.id, name: 'Own Name', balance: 50, providers: ['email', 'idp_d'] });
    });
  });

  describe('the linking table with a guest token', () => {
    it('an unknown identity upgrades the guest: same id, balance kept, welcome on top', async () => {
      const first = await guest(api);
      const answer = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'g-1', name: 'Gus' }) }, { token: first.body.access_token });
      expect(answer.status).to.equal(200);
      expect(answer.body.user).to.deep.include({ id: first.body.user.id, is_anonymous: false, balance: 150, name: 'Gus', providers: ['idp_a'] });
      expect((await transactionsOf(first.body.user.id)).map((row) => row.kind)).to.deep.equal(['guest_start', 'welcome']);
    });

    it('a known identity signs in its own account; the guest and its balance stay as they were', async () => {
      const owner = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'g-2' }) });
      const first = await guest(api);
      const answer = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'g-2' }) }, { token: first.body.access_token });
      expect(answer.body.user).to.deep.include({ id: owner.body.user.id, balance: 50 });
      const me = await api.get('/v1/me', { token: first.body.access_token });
      expect(me.body).to.include({ is_anonymous: true, balance: 100 });
    });

    it('an unknown identity with the verified email of an existing account signs that account in; the guest stays', async () => {
      const email = newEmail();
      const account = await registered(api, { email });
      const first = await guest(api);
      const answer = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'g-3', email, email_verified: true }) }, { token: first.body.access_token });
      expect(answer.body.user.id).to.equal(account.body.user.id);
      expect((await api.get('/v1/me', { token: first.body.access_token })).body.is_anonymous).to.equal(true);
    });

    it('lists providers as email first, then providers in link order', async () => {
      const email = newEmail();
      await registered(api, { email });
      userinfoD().reply(200, { sub: 'o-1', client_id: 'our-app', email });
      await api.post('/v1/auth/idp_d', { access_token: 'tok' });
      const answer = await api.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'o-1', email, email_verified: true }) });
      expect(answer.body.user.providers).to.deep.equal(['email', 'idp_d', 'idp_a']);
    });

    it('makes one account of two simultaneous first sign-ins of one identity', async () => {
      const idToken = await idpA.sign({ sub: 'same-person' });
      const answers = await Promise.all([1, 2, 3].map(() => api.post('/v1/auth/idp_a', { id_token: idToken })));
      expect(answers.map((answer) => answer.status)).to.deep.equal([200, 200, 200]);
      expect(new Set(answers.map((answer) => answer.body.user.id)).size).to.equal(1);
    });
  });

  describe('a provider that is not configured or does not answer', () => {
    it('answers 503 provider_unavailable for every provider when none is configured', async () => {
      const bare = await startTestApp();
      try {
        const bareApi = client(bare.url);
        expectError(await bareApi.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'x' }) }), 503, 'provider_unavailable');
        expectError(await bareApi.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'x' }) }), 503, 'provider_unavailable');
        expectError(await bareApi.post('/v1/auth/idp_c', { access_token: 'tok' }), 503, 'provider_unavailable');
        expectError(await bareApi.post('/v1/auth/idp_d', { access_token: 'tok' }), 503, 'provider_unavailable');
      } finally {
        await bare.close();
      }
    });

    it('answers 503 when the keys cannot be fetched (error status or timeout), and when idp_b has no code exchange configured', async () => {
      const down = await startTestApp({
        config: { ...idpConfig, IDP_A_JWKS_URL: 'https://idp-a-down.test/jwks', IDP_B_JWKS_URL: 'https://idp-b-slow.test/keys', IDP_B_TOKEN_URL: '' },
      });
      try {
        const downApi = client(down.url);
        nock('https://idp-a-down.test').get('/jwks').reply(500, 'down');
        expectError(await downApi.post('/v1/auth/idp_a', { id_token: await idpA.sign({ sub: 'x' }) }), 503, 'provider_unavailable');
        nock('https://idp-b-slow.test').get('/keys').delay(1000).reply(200, idpB.jwks);
        expectError(await downApi.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'x' }) }), 503, 'provider_unavailable');
        nock('https://idp-b-slow.test').get('/keys').reply(200, idpB.jwks);
        expectError(await downApi.post('/v1/auth/idp_b', { id_token: await idpB.sign({ sub: 'x' }), authorization_code: 'code' }), 503, 'provider_unavailable');
      } finally {
        await down.close();
      }
    });
  });
});
