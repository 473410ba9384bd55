import { expect } from 'chai';
import { pageBytes, pagingProperties, page } from '../../../api/http/paging';
import { defineRoute } from '../../../api/http/route';
import { schema } from '../../../common/validation';
import { openApiDocument } from '../../../api/openapi';
import { unbuiltRoutes } from '../../../api/unbuilt';
import { capturingLogger, resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';

const probeRoutes = [
  defineRoute({
    method: 'POST', path: '/v1/test/echo-shape', summary: 'test', access: 'public',
    body: schema.object({ email: schema.string({ maxLength: 10 }), password: schema.string({ minLength: 8, maxLength: 128 }) }, ['email', 'password']),
    handler: async (ctx, { body }) => { ctx.body = { keys: Object.keys(body as object) }; },
  }),
  defineRoute({
    method: 'GET', path: '/v1/test/paged', summary: 'test', access: 'public',
    query: schema.object(pagingProperties),
    handler: async (ctx, { query }) => { ctx.body = page([], 0, query as { limit: number; offset: number }); },
  }),
  defineRoute({
    method: 'GET', path: '/v1/test/boom', summary: 'test', access: 'public',
    handler: async () => { throw new Error('database exploded: secret-cause-42'); },
  }),
  defineRoute({ method: 'GET', path: '/v1/test/whoami-public', summary: 'test', access: 'public', handler: async (ctx, { user }) => { ctx.body = { user }; } }),
  defineRoute({ method: 'GET', path: '/v1/test/whoami-optional', summary: 'test', access: 'optional', handler: async (ctx, { user }) => { ctx.body = { user }; } }),
  defineRoute({ method: 'GET', path: '/v1/test/whoami-token', summary: 'test', access: 'token', handler: async (ctx, { user }) => { ctx.body = { user }; } }),
];

describe('HTTP conventions', () => {
  const captured = capturingLogger();
  const t = useTestApp({ log: captured.log, extraRoutes: probeRoutes });
  beforeEach(() => resetDatabase());


  describe('X-Request-Id', () => {
    it('is on every response, errors included', async () => {
      const answer = await t.api.get('/no/such/path');
      expect(answer.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    });
    it('reuses a well-formed incoming id', async () => {
      const answer = await t.api.get('/healthz', { headers: { 'X-Request-Id': 'client-abc-123456' } });
      expect(answer.headers.get('x-request-id')).to.equal('client-abc-123456');
    });
    it('replaces a malformed incoming id', async () => {
      const answer = await t.api.get('/healthz', { headers: { 'X-Request-Id': 'bad id with spaces' } });
      expect(answer.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    });
  });

  describe('error envelope', () => {
    it('answers an unknown route with 404 not_found', async () => {
      const answer = await t.api.get('/v1/definitely-not-a-route');
      expect(answer.status).to.equal(404);
      expect(answer.body).to.deep.equal({ error: { code: 'not_found', message: 'Not found.' } });
    });
    it('answers a path outside every route as an unknown one inside them, whatever the method', async () => {
      for (const method of ['GET', 'POST', 'PROPFIND']) {
        const outside = await t.api.request(method, '/outside-every-route');
        const inside = await t.api.request(method, '/v1/definitely-not-a-route');
        expect(outside.status, method).to.equal(inside.status);
        expect(outside.body, method).to.deep.equal(inside.body);
      }
      expect((await t.api.request('GET', '/outside-every-route')).body.error.code).to.equal('not_found');
    });
    it('answers a wrong method with 405 and the allowed methods', async () => {
      const answer = await t.api.delete('/v1/categories');
      expect(answer.status).to.equal(405);
      expect(answer.body.error.code).to.equal('method_not_allowed');
      expect(answer.headers.get('allow')).to.contain('GET');
    });
    it('answers malformed JSON with 422 validation_error without echoing it', async () => {
      const answer = await t.api.request('POST', '/v1/test/echo-shape', undefined, { raw: '{"email": "x@y", secret-value' });
      expect(answer.status).to.equal(422);
      expect(answer.body.error.code).to.equal('validation_error');
      expect(answer.text).not.to.contain('secret-value');
    });
    it('answers a 2 MB JSON body with 413 payload_too_large', async () => {
      const answer = await t.api.request('POST', '/v1/test/echo-shape', undefined, { raw: JSON.stringify({ email: 'a', password: 'x'.repeat(2 * 1024 * 1024) }) });
      expect(answer.status).to.equal(413);
      expect(answer.body.error.code).to.equal('payload_too_large');
    });
    it('answers a thrown error with a generic 500 and logs the cause with the request id', async () => {
      const answer = await t.api.get('/v1/test/boom');
      expect(answer.status).to.equal(500);
      expect(answer.body).to.deep.equal({ error: { code: 'internal_error', message: 'Internal server error.' } });
      expect(answer.text).not.to.contain('secret-cause-42');
      const requestId = answer.headers.get('x-request-id');
      const logged = captured.lines().find((line) => line.requestId === requestId && line.err);
      expect(JSON.stringify(logged)).to.contain('secret-cause-42');
    });
    it('logs one line per request with method, route, status and duration, and no token', async () => {
      const token = (await makeUser()).token;
      const answer = await t.api.get('/v1/test/whoami-token', { token });
      const line = captured.lines().find((entry) => entry.requestId === answer.headers.get('x-request-id') && entry.msg === 'request');
      expect(line).to.include({ method: 'GET', route: '/v1/test/whoami-token', status: 200 });
      expect(line!.durationMs).to.be.a('number');
      expect(JSON.stringify(captured.lines())).not.to.contain(token);
    });
    it('logs a catalog read sent again from the catalog cache as any other, under the caller\'s request id', async () => {
      await t.api.get('/v1/tags?locale=en');
      const replayed = await t.api.get('/v1/tags?locale=en', { headers: { 'x-request-id': 'replayed-read-0001' } });
      expect(replayed.headers.get('x-request-id')).to.equal('replayed-read-0001');
      const line = captured.lines().find((entry) => entry.requestId === 'replayed-read-0001' && entry.msg === 'request');
      expect(line).to.include({ method: 'GET', route: '/v1/tags', status: 200 });
      expect(line!.durationMs).to.be.a('number');
    });
  });

  describe('validation', () => {
    it('names each bad field in details as {loc, msg, type} and never echoes the value', async () => {
      const answer = await t.api.post('/v1/test/echo-shape', { email: 'too-long-address@example.com', password: 'short' });
      expect(answer.status).to.equal(422);
      const locs = answer.body.error.details.map((detail: { loc: string[] }) => detail.loc.join('.'));
      expect(locs).to.have.members(['body.email', 'body.password']);
      for (const detail of answer.body.error.details) expect(detail).to.have.all.keys('loc', 'msg', 'type');
      expect(answer.text).not.to.contain('too-long-address');
      expect(answer.text).not.to.contain('short');
    });
    it('names a missing required field', async () => {
      const answer = await t.api.post('/v1/test/echo-shape', { email: 'a@b.c' });
      expect(answer.body.error.details).to.deep.include({ loc: ['body', 'password'], msg: "must have required property 'password'", type: 'required' });
    });
    it('ignores unknown fields without echoing them', async () => {
      const answer = await t.api.post('/v1/test/echo-shape', { email: 'a@b.c', password: 'long-enough', extra: 'unknown-field-value' });
      expect(answer.status).to.equal(200);
      expect(answer.text).not.to.contain('unknown-field-value');
    });
  });

  describe('paging', () => {
    it('defaults to limit 20 and offset 0', async () => {
      const answer = await t.api.get('/v1/test/paged');
      expect(answer.body).to.deep.equal({ items: [], total: 0, limit: 20, offset: 0 });
    });
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'offset=10001', 'limit=abc']) {
      it(`rejects ${query} with 422`, async () => {
        const answer = await t.api.get(`/v1/test/paged?${query}`);
        expect(answer.status).to.equal(422);
        expect(answer.body.error.details[0].loc[0]).to.equal('query');
      });
    }
    it('accepts the bounds limit=100 and offset=10000', async () => {
      const answer = await t.api.get('/v1/test/paged?limit=100&offset=10000');
      expect(answer.body).to.include({ limit: 100, offset: 10000 });
    });
    it('writes a page from its items\' bytes exactly as JSON.stringify writes the page', () => {
      const items = [{ id: 'a', name: 'Зимний "портрет"', tags: ['x'], preview: null }, { id: 'b', name: 'B', tags: [], preview: { w: 1 } }];
      for (const answer of [page(items, 42, { limit: 2, offset: 4 }), page([], 0, { limit: 20, offset: 0 })]) {
        expect(pageBytes(answer, (item) => Buffer.from(JSON.stringify(item))).toString()).to.equal(JSON.stringify(answer));
      }
    });
  });

  describe('authentication', () => {
    it('answers a token route without a token with 401 auth_required', async () => {
      const answer = await t.api.get('/v1/test/whoami-token');
      expect(answer.status).to.equal(401);
      expect(answer.body.error.code).to.equal('auth_required');
    });
    it('answers a malformed Authorization header with 401', async () => {
      expect((await t.api.get('/v1/test/whoami-token', { headers: { authorization: 'Token abc' } })).status).to.equal(401);
      expect((await t.api.get('/v1/test/whoami-token', { token: 'not.a.jwt' })).status).to.equal(401);
    });
    it('answers an expired token with 401', async () => {
      const token = (await makeUser({ tokenTtlS: -10 })).token;
      expect((await t.api.get('/v1/test/whoami-token', { token })).status).to.equal(401);
    });
    it("answers a deleted user's token with 401", async () => {
      const token = (await makeUser()).token;
      await services().db('users').delete();
      expect((await t.api.get('/v1/test/whoami-token', { token })).status).to.equal(401);
    });
    it('passes a valid token and names the caller', async () => {
      const token = (await makeUser({ guest: true })).token;
      const answer = await t.api.get('/v1/test/whoami-token', { token });
      expect(answer.status).to.equal(200);
      expect(answer.body.user.isAnonymous).to.equal(true);
    });
    it('ignores a broken token on a public route', async () => {
      const answer = await t.api.get('/v1/test/whoami-public', { token: 'broken' });
      expect(answer.status).to.equal(200);
      expect(answer.body.user).to.equal(null);
    });
    it('rejects a broken token on an optional-guest route, accepts none', async () => {
      expect((await t.api.get('/v1/test/whoami-optional', { token: 'broken' })).status).to.equal(401);
      expect((await t.api.get('/v1/test/whoami-optional')).body.user).to.equal(null);
    });
  });

  describe('routes not built yet', () => {
    it('none is left: every contract path is built (the marketplace was the last)', async () => {
      expect(unbuiltRoutes).to.deep.equal([]);
      expect((await t.api.get('/v1/user-effects')).status).to.equal(401);
      expect((await t.api.get('/v1/user-effects', { token: (await makeUser()).token })).status).to.equal(200);
    });
    it('a section closed to guests answers them 403 registration_required', async () => {
      const answer = await t.api.post('/v1/user-effects', {}, { token: (await makeUser({ guest: true })).token });
      expect(answer.status).to.equal(403);
      expect(answer.body.error.code).to.equal('registration_required');
    });
  });

  describe('operations', () => {
    it('answers /healthz', async () => {
      expect((await t.api.get('/healthz')).status).to.equal(200);
    });
    it('answers /readyz with every check true', async () => {
      const answer = await t.api.get('/readyz');
      expect(answer.status).to.equal(200);
      expect(answer.body.checks).to.deep.equal({ database: true, migrations: true, queue: true });
    });
  });

  describe('/v1/openapi.json', () => {
    it('publishes every contract path with the schemas that validate it', async () => {
      const answer = await t.api.get('/v1/openapi.json');
      expect(answer.body.openapi).to.equal('3.1.0');
      expect(answer.body.paths).to.include.keys('/v1/auth/anonymous', '/v1/generations/{id}', '/v1/payments', '/v1/offers/current');
      const document = openApiDocument(probeRoutes, 'http://127.0.0.1') as { paths: Record<string, Record<string, any>> };
      const echo = document.paths['/v1/test/echo-shape'].post;
      expect(echo.requestBody.content['application/json'].schema.properties.password).to.deep.equal({ type: 'string', minLength: 8, maxLength: 128 });
    });
  });
});
