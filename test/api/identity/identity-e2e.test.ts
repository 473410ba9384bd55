import { expect } from 'chai';
import { startIdpBRevocation } from '../../../workers/accounts/revoke-idp-b';
import { expectError, guest, newEmail, type Api } from '../../accounts';
import { client } from '../../client';
import { resetDatabase, startTestApp, type TestApp } from '../../harness';
import { eventually } from '../../../scripts/wait';
import { startFakeOpenIdProvider, startFakeUserinfo, type FakeOpenIdProvider, type FakeUserinfo } from './fake-providers';
import { testSigner, type TestSigner } from './identity-tokens';

describe('identity providers end to end (fake providers over loopback HTTP)', () => {
  let openId: FakeOpenIdProvider;
  let userinfo: FakeUserinfo;
  let signer: TestSigner;
  let app: TestApp;
  let api: Api;

  before(async () => {
    openId = await startFakeOpenIdProvider(() => signer.jwks, { id: 'svc.e2e', secret: 'e2e-secret' });
    const issuer = openId.url;
    signer = await testSigner(issuer, 'svc.e2e');
    userinfo = await startFakeUserinfo();
    app = await startTestApp({
      config: {
        IDP_A_ISSUER: issuer,
        IDP_A_AUDIENCE: 'svc.e2e',
        IDP_A_JWKS_URL: `${openId.url}/jwks`,
        IDP_B_ISSUER: issuer,
        IDP_B_AUDIENCE: 'svc.e2e',
        IDP_B_JWKS_URL: `${openId.url}/jwks`,
        IDP_B_TOKEN_URL: `${openId.url}/token`,
        IDP_B_REVOKE_URL: `${openId.url}/revoke`,
        IDP_B_CLIENT_ID: 'svc.e2e',
        IDP_B_CLIENT_SECRET: 'e2e-secret',
        IDP_C_USERINFO_URL: `${userinfo.url}/userinfo`,
        IDP_D_USERINFO_URL: `${userinfo.url}/userinfo`,
        IDP_D_CLIENT_ID: 'our-app',
        IDP_TIMEOUT_MS: '400',
      },
    });
    api = client(app.url);
  });
  beforeEach(() => resetDatabase());
  after(async () => {
    await app.close();
    await openId.close();
    await userinfo.close();
  });

  it('idp_b: a guest signs up with a code; deleting the account revokes the grant in the background', async () => {
    openId.codes.set('code-e2e', 'grant-e2e');
    const first = await guest(api);
    const signedIn = await api.post('/v1/auth/idp_b', { id_token: await signer.sign({ sub: 'person-1', email: newEmail(), email_verified: true }), authorization_code: 'code-e2e' }, { token: first.body.access_token });
    expect(signedIn.status, signedIn.text).to.equal(200);
    expect(signedIn.body.user).to.deep.include({ id: first.body.user.id, is_anonymous: false, providers: ['idp_b'], balance: 150 });

    expectError(await api.post('/v1/auth/idp_b', { id_token: await signer.sign({ sub: 'person-1' }), authorization_code: 'code-e2e' }), 401, 'invalid_credentials');

    expect((await api.delete('/v1/me', { token: signedIn.body.access_token })).status).to.equal(204);
    expect(openId.revocations).to.deep.equal([]);
    const revocation = await startIdpBRevocation(app.services);
    try {
      await eventually(() => openId.revocations.length > 0, Boolean, 8000);
    } finally {
      await revocation.stop();
    }
    expect(openId.revocations).to.deep.equal([{ token: 'grant-e2e', token_type_hint: 'refresh_token', client_id: 'svc.e2e', client_secret: 'e2e-secret' }]);
  });

  it('idp_a: verifies the id_token against the keys served over HTTP, fetching them once', async () => {
    const before = openId.jwksRequests;
    for (const subject of ['person-2', 'person-3']) {
      const answer = await api.post('/v1/auth/idp_a', { id_token: await signer.sign({ sub: subject }) });
      expect(answer.status, answer.text).to.equal(200);
    }
    expect(openId.jwksRequests - before).to.be.at.most(1);
  });

  it('idp_c and idp_d: a userinfo request with the bearer token; 401 for an unknown token, 503 for a silent or failing provider', async () => {
    userinfo.profiles.set('token-c', { sub: 'c-person', name: 'Cee' });
    userinfo.profiles.set('token-d', { sub: 'd-person', name: 'Dee', client_id: 'our-app', email: newEmail() });
    const c = await api.post('/v1/auth/idp_c', { access_token: 'token-c', oauth_provider: 'btn_3' });
    expect(c.body.user).to.deep.include({ name: 'Cee', providers: ['btn_3'], email: null });
    const d = await api.post('/v1/auth/idp_d', { access_token: 'token-d' });
    expect(d.body.user).to.deep.include({ name: 'Dee', providers: ['idp_d'] });
    expectError(await api.post('/v1/auth/idp_c', { access_token: 'unknown' }), 401, 'invalid_credentials');
    expectError(await api.post('/v1/auth/idp_d', { access_token: 'boom' }), 503, 'provider_unavailable');
    const started = Date.now();
    expectError(await api.post('/v1/auth/idp_c', { access_token: 'hang' }), 503, 'provider_unavailable');
    expect(Date.now() - started).to.be.within(350, 2000);
  });
});
