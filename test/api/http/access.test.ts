import { expect } from 'chai';
import { allRoutes } from '../../../api/routes';
import { expectError, guest, registered } from '../../accounts';
import { resetDatabase, useTestApp } from '../../harness';

/** The contract's access levels (`x-access` in /v1/openapi.json) and guest access, for every account route. */
const partA: [string, string, 'public' | 'optional' | 'token' | 'registered'][] = [
  ['POST', '/v1/auth/anonymous', 'public'],
  ['POST', '/v1/auth/register', 'optional'],
  ['POST', '/v1/auth/login', 'public'],
  ['POST', '/v1/auth/idp_a', 'optional'],
  ['POST', '/v1/auth/idp_b', 'optional'],
  ['POST', '/v1/auth/idp_c', 'optional'],
  ['POST', '/v1/auth/idp_d', 'optional'],
  ['POST', '/v1/auth/refresh', 'public'],
  ['POST', '/v1/auth/logout', 'token'],
  ['POST', '/v1/auth/change-password', 'registered'],
  ['GET', '/v1/me', 'token'],
  ['PATCH', '/v1/me', 'token'],
  ['DELETE', '/v1/me', 'token'],
  ['POST', '/v1/me/avatar/upload-url', 'token'],
  ['PUT', '/v1/me/avatar', 'token'],
  ['DELETE', '/v1/me/avatar', 'token'],
  ['GET', '/v1/referral', 'registered'],
  ['GET', '/v1/credits/balance', 'token'],
  ['GET', '/v1/credits/transactions', 'token'],
];

describe('access levels of the account routes', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  it('declares each route with the access level of the contract, and builds it (no 501)', () => {
    const routes = allRoutes('http://127.0.0.1');
    for (const [method, path, access] of partA) {
      const route = routes.find((candidate) => candidate.method === method && candidate.path === path);
      expect(route, `${method} ${path}`).to.not.equal(undefined);
      expect(route!.access, `${method} ${path}`).to.equal(access);
      expect(route!.handler, `${method} ${path} is built`).to.be.a('function');
    }
  });

  it('answers 401 auth_required without a token on every T route', async () => {
    for (const [method, path] of partA.filter(([, , level]) => level === 'token' || level === 'registered')) {
      expectError(await t.api.request(method, path, method === 'GET' || method === 'DELETE' ? undefined : {}), 401, 'auth_required');
    }
  });

  it('answers a guest 403 registration_required exactly on the routes closed to guests', async () => {
    const first = await guest(t.api);
    const token = first.body.access_token;
    expectError(await t.api.get('/v1/referral', { token }), 403, 'registration_required');
    expectError(await t.api.post('/v1/auth/change-password', { new_password: 'whatever long' }, { token }), 403, 'registration_required');
    expect((await t.api.get('/v1/me', { token })).status).to.equal(200);
    expect((await t.api.get('/v1/credits/balance', { token })).status).to.equal(200);
    expect((await t.api.get('/v1/credits/transactions', { token })).status).to.equal(200);
    expect((await t.api.post('/v1/me/avatar/upload-url', { content_type: 'image/png' }, { token })).status).to.equal(200);
  });

  it('lets a full account through the registered routes', async () => {
    const account = await registered(t.api);
    expect((await t.api.get('/v1/referral', { token: account.body.access_token })).status).to.equal(200);
  });

  it('answers 401 for a broken token on the optional (G) routes, and ignores it on the public ones', async () => {
    expectError(await t.api.post('/v1/auth/register', {}, { token: 'broken' }), 401, 'auth_required');
    expectError(await t.api.post('/v1/auth/idp_c', { access_token: 'x' }, { token: 'broken' }), 401, 'auth_required');
    expect((await t.api.post('/v1/auth/anonymous', { device_id: 'dev-broken-token' }, { token: 'broken' })).status).to.equal(200);
  });
});
