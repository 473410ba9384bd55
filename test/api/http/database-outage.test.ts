import { expect } from 'chai';
import { startWeb, type Web } from '../../../api/web';
import { client, type Answer, type Api } from '../../client';
import { proxiedDatabase, type ProxiedDatabase } from '../../fault-proxies';
import { insertEffect, photo, storedUpload } from '../../generation-fixtures';
import { freePort, resetDatabase, services, testConfig } from '../../harness';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';

describe('the API while its database is unreachable', function () {
  this.timeout(30_000);
  let database: ProxiedDatabase;
  let web: Web;
  let api: Api;
  let user: TestUser;
  let effectId: string;
  let uploadId: string;

  before(async () => {
    await resetDatabase();
    database = await proxiedDatabase();
    web = await startWeb({ ...services(), db: database.db, config: testConfig({ PORT: String(await freePort()) }) });
    api = client(web.url);
    user = await makeUser({ guest: true, balance: 100 });
    effectId = await insertEffect('winter-portrait');
    uploadId = await storedUpload(user.id, await photo());
  });
  after(async () => {
    database.proxy.restore();
    await web.stop();
    await database.close();
  });

  it('answers 503 provider_unavailable with Retry-After on every kind of request, never 500, and recovers by itself', async () => {
    expect((await api.get('/v1/me', { token: user.token })).status).to.equal(200);
    database.proxy.cut();
    const requests: [string, () => Promise<Answer>][] = [
      ['GET /v1/me', () => api.get('/v1/me', { token: user.token })],
      ['GET /v1/effects', () => api.get('/v1/effects')],
      ['GET /v1/generations', () => api.get('/v1/generations', { token: user.token })],
      ['POST /v1/generations', () => api.post('/v1/generations', { effect_id: effectId, characters: [[uploadId]] }, { token: user.token })],
      ['POST /v1/auth/anonymous', () => api.post('/v1/auth/anonymous', { device_id: 'outage-device' })],
    ];
    for (const [name, request] of requests) {
      const answer = await request();
      expect(answer.status, `${name}: ${answer.text}`).to.equal(503);
      expect(answer.body.error.code, name).to.equal('provider_unavailable');
      expect(answer.headers.get('retry-after'), name).to.match(/^[1-9]\d*$/);
      expect(answer.headers.get('x-request-id'), name).to.be.a('string');
    }
    database.proxy.restore();
    await eventually(async () => (await api.get('/v1/me', { token: user.token })).status, (status) => status === 200, 10_000);
  });

  it('/readyz says the database is unreachable: 503 with Retry-After, quickly', async () => {
    database.proxy.cut();
    try {
      const started = Date.now();
      const answer = await api.get('/readyz');
      expect(answer.status).to.equal(503);
      expect(answer.body).to.deep.include({ status: 'not_ready' });
      expect(answer.body.checks.database).to.equal(false);
      expect(answer.headers.get('retry-after')).to.match(/^[1-9]\d*$/);
      expect(Date.now() - started).to.be.below(5000);
    } finally {
      database.proxy.restore();
    }
    await eventually(async () => (await api.get('/readyz')).status, (status) => status === 200, 10_000);
  });
});
