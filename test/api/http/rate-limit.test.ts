import { expect } from 'chai';
import { readBudget, requestSource, takeToken, writeBudget } from '../../../api/http/rate-limit';
import { defineRoute } from '../../../api/http/route';
import { createKnex } from '../../../db/knex';
import { expectError, newDeviceId, newEmail, password, registered } from '../../accounts';
import { client } from '../../client';
import { databaseUrl, resetDatabase, services, startTestApp, type TestApp } from '../../harness';

const from = (address: string) => ({ headers: { 'X-Forwarded-For': address } });

describe('rate limits', () => {
  beforeEach(() => resetDatabase());

  describe('request source', () => {
    it('is the IPv4 address, also when written as IPv4-mapped IPv6', () => {
      expect(requestSource('203.0.113.7')).to.equal('203.0.113.7');
      expect(requestSource('::ffff:203.0.113.7')).to.equal('203.0.113.7');
    });

    it('is the /64 network of an IPv6 address, however it is written', () => {
      expect(requestSource('2001:db8:1:2:3:4:5:6')).to.equal('2001:db8:1:2::/64');
      expect(requestSource('2001:0db8:0001:0002:ffff::1')).to.equal('2001:db8:1:2::/64');
      expect(requestSource('2001:DB8:1:2::')).to.equal('2001:db8:1:2::/64');
      expect(requestSource('2001:db8::1')).to.equal('2001:db8:0:0::/64');
      expect(requestSource('::1')).to.equal('0:0:0:0::/64');
      expect(requestSource('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
      expect(requestSource('64:ff9b::192.0.2.33')).to.equal('64:ff9b:0:0::/64');
    });
  });

  describe('token buckets', () => {
    it('take one token per hit and refuse with the wait when empty', async () => {
      const oneConnection = createKnex(databaseUrl(), 1);
      try {
        const settings = { burst: 2, perMinute: 6 };
        expect(await takeToken(oneConnection, 'k', settings)).to.deep.equal({ allowed: true });
        expect(await takeToken(oneConnection, 'k', settings)).to.deep.equal({ allowed: true });
        const refused = await takeToken(oneConnection, 'k', settings);
        expect(refused.allowed).to.equal(false);
        expect((refused as { retryAfterS: number }).retryAfterS).to.be.within(9, 10);
        // A token's commit skipped the flush for its own transaction only.
        expect((await oneConnection.raw('show synchronous_commit')).rows).to.deep.equal([{ synchronous_commit: 'on' }]);
      } finally {
        await oneConnection.destroy();
      }
    });

    it('refill over time', async () => {
      const { db } = services();
      const settings = { burst: 1, perMinute: 600 };
      await takeToken(db, 'k', settings);
      expect((await takeToken(db, 'k', settings)).allowed).to.equal(false);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect((await takeToken(db, 'k', settings)).allowed).to.equal(true);
    });

    it('never hand out the same token twice under concurrency', async () => {
      const { db } = services();
      const results = await Promise.all(Array.from({ length: 12 }, () => takeToken(db, 'shared', { burst: 5, perMinute: 1 })));
      expect(results.filter((result) => result.allowed)).to.have.length(5);
    });
  });

  describe('auth endpoints: per operation, per source', () => {
    let app: TestApp;
    before(async () => {
      app = await startTestApp({ config: { TRUST_PROXY: '1', RATE_AUTH_BURST: '3', RATE_AUTH_PER_MINUTE: '1' } });
    });
    after(() => app.close());

    it('answer 429 rate_limited with Retry-After past the burst, before validation', async () => {
      const api = client(app.url);
      for (let attempt = 0; attempt < 3; attempt += 1) {
        expectError(await api.post('/v1/auth/login', { email: newEmail(), password }, from('198.51.100.1')), 401, 'invalid_credentials');
      }
      const limited = await api.post('/v1/auth/login', {}, from('198.51.100.1'));
      expectError(limited, 429, 'rate_limited');
      expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    });

    it('count each operation separately and each source separately', async () => {
      const api = client(app.url);
      for (let attempt = 0; attempt < 3; attempt += 1) await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('198.51.100.2'));
      expectError(await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('198.51.100.2')), 429, 'rate_limited');
      expectError(await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('198.51.100.3')), 401, 'auth_required');
      expectError(await api.post('/v1/auth/login', { email: newEmail(), password }, from('198.51.100.2')), 401, 'invalid_credentials');
    });

    it('treat one IPv6 /64 as one source, and take only the first X-Forwarded-For address', async () => {
      const api = client(app.url);
      for (const address of ['2001:db8:5:6::1', '2001:db8:5:6::2', '2001:db8:5:6:ffff::3']) {
        await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from(address));
      }
      expectError(await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('2001:db8:5:6::4, 10.0.0.1')), 429, 'rate_limited');
      expectError(await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('2001:db8:5:7::1')), 401, 'auth_required');
    });

    it('cover anonymous, register, login, refresh, change-password and the four providers', async () => {
      const api = client(app.url);
      const calls: [string, Record<string, unknown>][] = [
        ['/v1/auth/anonymous', {}], ['/v1/auth/register', {}], ['/v1/auth/login', {}], ['/v1/auth/refresh', {}],
        ['/v1/auth/idp_a', {}], ['/v1/auth/idp_b', {}], ['/v1/auth/idp_c', {}], ['/v1/auth/idp_d', {}],
      ];
      for (const [path, body] of calls) {
        for (let attempt = 0; attempt < 3; attempt += 1) await api.post(path, body, from('198.51.100.9'));
        expectError(await api.post(path, body, from('198.51.100.9')), 429, 'rate_limited');
      }
      const account = await registered(api, {}, undefined);
      const token = account.body.access_token;
      for (let attempt = 0; attempt < 3; attempt += 1) await api.post('/v1/auth/change-password', {}, { token, ...from('198.51.100.10') });
      expectError(await api.post('/v1/auth/change-password', {}, { token, ...from('198.51.100.10') }), 429, 'rate_limited');
    });

    it('ignore X-Forwarded-For without TRUST_PROXY: every request counts for the socket address', async () => {
      const direct = await startTestApp({ config: { RATE_AUTH_BURST: '2', RATE_AUTH_PER_MINUTE: '1' } });
      try {
        const api = client(direct.url);
        await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('198.51.100.20'));
        await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('198.51.100.21'));
        expectError(await api.post('/v1/auth/refresh', { refresh_token: 'x' }, from('198.51.100.22')), 429, 'rate_limited');
      } finally {
        await direct.close();
      }
    });
  });

  describe('login lock and distributed guessing', () => {
    let app: TestApp;
    before(async () => {
      app = await startTestApp({ config: { TRUST_PROXY: '1', LOGIN_LOCK_FAILURES: '3', LOGIN_GUARD_FAILURES: '6' } });
    });
    after(() => app.close());

    it('locks (email, source) after a series of wrong passwords, even for the right one; other networks and emails are not affected', async () => {
      const api = client(app.url);
      const email = newEmail();
      const other = newEmail();
      await registered(api, { email });
      await registered(api, { email: other });
      for (let attempt = 0; attempt < 3; attempt += 1) {
        expectError(await api.post('/v1/auth/login', { email, password: 'wrong password' }, from('203.0.113.1')), 401, 'invalid_credentials');
      }
      const locked = await api.post('/v1/auth/login', { email: email.toUpperCase(), password }, from('203.0.113.1'));
      expectError(locked, 429, 'rate_limited');
      expect(Number(locked.headers.get('retry-after'))).to.be.within(800, 900);
      expect((await api.post('/v1/auth/login', { email, password }, from('203.0.113.2'))).status).to.equal(200);
      expect((await api.post('/v1/auth/login', { email: other, password }, from('203.0.113.1'))).status).to.equal(200);
    });

    it('a correct password ends the series of its (email, source)', async () => {
      const api = client(app.url);
      const email = newEmail();
      await registered(api, { email });
      for (const attempt of ['wrong one', 'wrong two', password, 'wrong three', 'wrong four']) {
        await api.post('/v1/auth/login', { email, password: attempt }, from('203.0.113.5'));
      }
      expect((await api.post('/v1/auth/login', { email, password }, from('203.0.113.5'))).status).to.equal(200);
    });

    it('after many wrong passwords from many sources accepts the password only from a device that signed in before', async () => {
      const api = client(app.url);
      const email = newEmail();
      const knownDevice = newDeviceId();
      await registered(api, { email, device_id: knownDevice });
      for (let source = 0; source < 6; source += 1) {
        await api.post('/v1/auth/login', { email, password: 'guess' }, from(`192.0.2.${source + 10}`));
      }
      const stranger = await api.post('/v1/auth/login', { email, password, device_id: newDeviceId() }, from('192.0.2.100'));
      expectError(stranger, 429, 'rate_limited');
      expect(Number(stranger.headers.get('retry-after'))).to.be.within(3500, 3600);
      expectError(await api.post('/v1/auth/login', { email, password }, from('192.0.2.101')), 429, 'rate_limited');
      const owner = await api.post('/v1/auth/login', { email, password, device_id: knownDevice }, from('192.0.2.102'));
      expect(owner.status).to.equal(200);
    });
  });

  describe('per-user budgets', () => {
    it('share one read budget across /me, /credits and /referral, per user', async () => {
      const app = await startTestApp({ config: { RATE_READ_BURST: '3', RATE_READ_PER_MINUTE: '1' } });
      try {
        const api = client(app.url);
        const first = await registered(api);
        const second = await registered(api);
        const token = first.body.access_token;
        expect((await api.get('/v1/me', { token })).status).to.equal(200);
        expect((await api.get('/v1/credits/balance', { token })).status).to.equal(200);
        expect((await api.get('/v1/referral', { token })).status).to.equal(200);
        const limited = await api.get('/v1/credits/transactions', { token });
        expectError(limited, 429, 'rate_limited');
        expect(limited.headers.get('retry-after')).to.equal('60');
        expect((await api.get('/v1/me', { token: second.body.access_token })).status).to.equal(200);
      } finally {
        await app.close();
      }
    });

    it('give writes their own budget per user', async () => {
      const probe = defineRoute({ method: 'POST', path: '/v1/test/write', summary: 'test', access: 'token', limits: [writeBudget()], handler: async (ctx) => { ctx.status = 204; } });
      const app = await startTestApp({ config: { RATE_WRITE_BURST: '2', RATE_WRITE_PER_MINUTE: '1' }, extraRoutes: [probe] });
      try {
        const api = client(app.url);
        const { body } = await registered(api);
        const token = body.access_token;
        expect((await api.post('/v1/test/write', {}, { token })).status).to.equal(204);
        expect((await api.post('/v1/test/write', {}, { token })).status).to.equal(204);
        expectError(await api.post('/v1/test/write', {}, { token }), 429, 'rate_limited');
        expect((await api.get('/v1/me', { token })).status, 'reads are another budget').to.equal(200);
      } finally {
        await app.close();
      }
    });

    it('are factories usable in any route table', () => {
      expect(readBudget()).to.be.a('function');
      expect(writeBudget()).to.be.a('function');
    });
  });
});
