import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../../config';
import { formToken } from '../../../api/ops/form-guard';
import { balanceOf } from '../../generation-fixtures';
import { startSummaryLines } from '../../../process/start-summary';
import { capturingLogger, databaseUrl, resetDatabase, services, startTestApp, testConfig, type TestApp } from '../../harness';
import { basic, formTokenOf, operator, operatorHeaders, opsConfig, rowCells, scriptedName, seedConsoleData, seedMarketplace, type ConsoleData, type MarketplaceData } from './ops-fixtures';
import { jobsOf } from '../../jobs';

/**
 * The operator console over real HTTP against real Postgres: nothing under /ops without the
 * operator's credentials, each page's figures from the real tables, the replay action (the code
 * path of `npm run replay-failed`), and the forms' cross-site protection.
 */
describe('operator console /ops', function () {
  this.timeout(30_000);
  let app: TestApp;

  before(async () => {
    app = await startTestApp({ config: { ...opsConfig, LOGIN_LOCK_FAILURES: '1000' } });
  });
  after(() => app.close());

  const get = (url: string, headers: Record<string, string> = operatorHeaders) => fetch(app.url + url, { headers, redirect: 'manual' });
  const post = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) => fetch(app.url + url, {
    method: 'POST',
    headers: { ...operatorHeaders, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  });

  /** Forms a console page's post must be refused with (403): a missing, forged, stale or foreign token, or a cross-site post of the page's own token. */
  const crossSiteRefusals = (pagePath: string): [string, () => Promise<Record<string, string>>, () => Record<string, string>][] => {
    const pageToken = async () => ({ csrf: formTokenOf(await (await get(pagePath)).text()) });
    return [
      ['no form token', async () => ({}), () => ({})],
      ['a made-up token', async () => ({ csrf: `${Math.floor(Date.now() / 1000)}.${'A'.repeat(43)}` }), () => ({})],
      ['a token older than 12 hours', async () => ({ csrf: formToken(app.services.config, Date.now() - 13 * 3600_000) }), () => ({})],
      ['a token signed for another operator', async () => ({ csrf: formToken({ ...app.services.config, ops: { ...app.services.config.ops, user: 'someone-else' } }) }), () => ({})],
      ['a token from a page, sent from another site', pageToken, () => ({ origin: 'https://evil.example' })],
      ['a token from a page, Origin null', pageToken, () => ({ origin: 'null' })],
      ['a token from a page, a cross-site fetch without Origin', pageToken, () => ({ 'sec-fetch-site': 'cross-site' })],
      ['a token from a page, a same-site (another subdomain) post with the console as Origin', pageToken, () => ({ 'sec-fetch-site': 'same-site', origin: app.url })],
    ];
  };

  describe('credentials', () => {
    const consolePaths = ['/ops', '/ops/', '/ops/pool', '/ops/activity', '/ops/failed', '/ops/failed?code=safety', '/ops/payments',
      '/ops/marketplace', '/ops/marketplace/archive', '/ops/queues', '/ops/queues/', '/ops/queues.data', '/ops/queues/queues', '/ops/queues/assets/root.css', '/ops/no-such-page'];
    const wrong: [string, Record<string, string>][] = [
      ['no Authorization', {}],
      ['a wrong password', { authorization: basic(operator.user, 'wrong-password-0123456') }],
      ['a wrong user', { authorization: basic('admin', operator.password) }],
      ['an empty password', { authorization: basic(operator.user, '') }],
      ['the password with a trailing space', { authorization: basic(operator.user, `${operator.password} `) }],
      ['a Bearer token', { authorization: `Bearer ${operator.password}` }],
      ['broken Basic', { authorization: 'Basic %%%' }],
      ['Basic without a colon', { authorization: `Basic ${Buffer.from(operator.password).toString('base64')}` }],
    ];

    for (const [what, headers] of wrong) {
      it(`every /ops path answers 401 with WWW-Authenticate: Basic to ${what}, whatever the method`, async () => {
        for (const url of consolePaths) {
          for (const method of ['GET', 'POST', 'DELETE']) {
            const answer = await fetch(app.url + url, { method, headers, redirect: 'manual' });
            expect(answer.status, `${method} ${url}`).to.equal(401);
            expect(answer.headers.get('www-authenticate'), `${method} ${url}`).to.equal('Basic realm="operator console", charset="UTF-8"');
            expect(await answer.json()).to.deep.equal({ error: { code: 'auth_required', message: 'Authentication required.' } });
          }
        }
      });
    }

    it('the replay form without credentials replays nothing', async () => {
      await resetDatabase();
      const data = await seedConsoleData();
      const target = data.failed.providerError[0];
      const answer = await fetch(`${app.url}/ops/failed/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ id: target.id, csrf: formToken(app.services.config) }).toString(),
      });
      expect(answer.status).to.equal(401);
      expect(await services().db('generations').where({ id: target.id }).first('replayed_as')).to.deep.equal({ replayed_as: null });
    });

    it('the archive form without credentials archives nothing', async () => {
      await resetDatabase();
      await seedConsoleData();
      const market = await seedMarketplace();
      const answer = await fetch(`${app.url}/ops/marketplace/archive`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ id: market.live.recent, reason: 'spam', csrf: formToken(app.services.config) }).toString(),
        redirect: 'manual',
      });
      expect(answer.status).to.equal(401);
      expect(await services().db('user_effects').where({ id: market.live.recent }).first('status')).to.deep.equal({ status: 'approved' });
    });

    it('paths beside /ops are not the console: /opsx, /ops.data', async () => {
      for (const url of ['/opsx', '/ops.data']) expect((await fetch(app.url + url)).status, url).to.equal(404);
    });

    it('with the right credentials every page answers 200 under the strict page policy, an unknown one 404', async () => {
      await resetDatabase();
      for (const url of ['/ops', '/ops/pool', '/ops/activity', '/ops/failed', '/ops/payments', '/ops/marketplace']) {
        const answer = await get(url);
        expect(answer.status, url).to.equal(200);
        expect(answer.headers.get('content-type')).to.equal('text/html; charset=utf-8');
        const policy = answer.headers.get('content-security-policy')!;
        expect(policy, url).to.match(/^default-src 'none'; style-src 'sha256-[^']+'; img-src data:; form-action /);
        expect(policy, url).not.to.contain('script-src').and.not.to.contain('unsafe-inline');
        expect(answer.headers.get('cache-control')).to.equal('no-store');
        const page = await answer.text();
        expect(page).not.to.match(/<script|\son[a-z]+=|style="/i);
      }
      expect((await get('/ops/failed')).headers.get('content-security-policy')).to.contain("form-action 'self'");
      expect((await get('/ops/marketplace')).headers.get('content-security-policy')).to.contain("form-action 'self'");
      expect((await get('/ops/pool')).headers.get('content-security-policy')).to.contain("form-action 'none'");
      expect((await get('/ops/no-such-page')).status).to.equal(404);
      expect((await fetch(`${app.url}/ops/pool`, { method: 'DELETE', headers: operatorHeaders })).status).to.equal(405);
    });

    it('wrong credentials from one source are locked out after LOGIN_LOCK_FAILURES: then even the right ones get 429', async () => {
      await resetDatabase();
      const locking = await startTestApp({ config: { ...opsConfig, LOGIN_LOCK_FAILURES: '3', LOGIN_LOCK_S: '600' } });
      try {
        const wrongOnce = () => fetch(`${locking.url}/ops`, { headers: { authorization: basic(operator.user, 'guess-number-0123456') } });
        // Asking without credentials (what a browser does first) is no failure.
        for (let index = 0; index < 5; index += 1) expect((await fetch(`${locking.url}/ops`)).status).to.equal(401);
        for (let index = 0; index < 3; index += 1) expect((await wrongOnce()).status).to.equal(401);
        const locked = await fetch(`${locking.url}/ops`, { headers: operatorHeaders });
        expect(locked.status).to.equal(429);
        expect(Number(locked.headers.get('retry-after'))).to.be.within(590, 600);
        expect((await wrongOnce()).status).to.equal(429);
        await services().db('login_failures').where('key', 'like', 'ops:%').delete();
        expect((await fetch(`${locking.url}/ops`, { headers: operatorHeaders })).status).to.equal(200);
      } finally {
        await locking.close();
      }
    });
  });

  describe('configuration', () => {
    it('OPS_PASSWORD is generated once under DATA_DIR in the embedded default, and printed in the start summary', async () => {
      const dataDir = path.join(testConfig().dataDir, 'ops-generated');
      const first = loadConfig({ DATA_DIR: dataDir, TOKEN_SECRET: 'x'.repeat(40) });
      const again = loadConfig({ DATA_DIR: dataDir, TOKEN_SECRET: 'x'.repeat(40) });
      expect(first.ops).to.deep.include({ user: 'operator', passwordGenerated: true });
      expect(first.ops.password).to.have.length.of.at.least(32).and.equal(again.ops.password);
      expect(JSON.parse(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8')).OPS_PASSWORD).to.equal(first.ops.password);

      const logged = capturingLogger();
      const started = await startTestApp({ config: { DATA_DIR: dataDir }, log: logged.log });
      try {
        const facts = { ...started.services.config, embeddedPostgresPort: null, embeddedStore: true, simulators: [] };
        expect(startSummaryLines(facts, { lan: false, qrCode: false })[2])
          .to.equal(`Operator console: ${started.services.config.publicBaseUrl}/ops, user operator, password ${first.ops.password} (generated once, kept in ${dataDir}/secrets.json)`);
        // Printed there once: the web role's own line says where the console is, without the password.
        const line = logged.lines().find((entry) => entry.msg === 'operator console listening')!;
        expect(line).to.include({ url: `${started.services.config.publicBaseUrl}/ops`, user: 'operator' });
        expect(JSON.stringify(logged.lines())).not.to.contain(first.ops.password);
        const answer = await fetch(`${started.url}/ops`, { headers: { authorization: basic('operator', first.ops.password!) } });
        expect(answer.status).to.equal(200);
      } finally {
        await started.close();
      }
    });

    it('beside a configured DATABASE_URL without OPS_PASSWORD the console is closed: 401 for everyone, said in the start log', async () => {
      const closedConfig = loadConfig({ DATA_DIR: path.join(testConfig().dataDir, 'ops-closed'), TOKEN_SECRET: 'x'.repeat(40), DATABASE_URL: databaseUrl() });
      expect(closedConfig.ops).to.deep.equal({ user: 'operator', password: null, passwordGenerated: false });
      const logged = capturingLogger();
      const closed = await startTestApp({ config: { DATABASE_URL: databaseUrl() }, log: logged.log });
      try {
        expect(logged.lines().some((entry) => String(entry.msg).startsWith('OPERATOR CONSOLE CLOSED'))).to.equal(true);
        for (const password of ['', 'null', 'undefined']) {
          expect((await fetch(`${closed.url}/ops`, { headers: { authorization: basic('operator', password) } })).status).to.equal(401);
        }
      } finally {
        await closed.close();
      }
    });

    it('OPS_PASSWORD shorter than 16 characters stops the start', () => {
      expect(() => loadConfig({ TOKEN_SECRET: 'x'.repeat(40), DATA_DIR: testConfig().dataDir, OPS_PASSWORD: 'short' })).to.throw('OPS_PASSWORD must be at least 16 characters');
    });
  });

  describe('pages against the real tables', () => {
    let data: ConsoleData;
    before(async () => {
      await resetDatabase();
      data = await seedConsoleData();
    });

    it('the pool: slots leased and free per account, cool-down, last hour errors by code and latency', async () => {
      const page = await (await get('/ops/pool')).text();
      const [busyLabel, coolingLabel] = ['busy…001', 'cool…002'];
      const busy = rowCells(page, 'account', busyLabel);
      expect(busy.slice(0, 6)).to.deep.equal([busyLabel, 'simulator', 'available', '4', '3', '1']);
      expect(busy[6]).to.equal('—');
      expect(busy.slice(7, 10)).to.deep.equal(['3', '0', '—']);
      expect(busy[10]).to.equal('20 s / 29 s');
      const cooling = rowCells(page, 'account', coolingLabel);
      expect(cooling.slice(0, 6)).to.deep.equal([coolingLabel, 'simulator', 'cooling down', '2', '1', '1']);
      expect(cooling[6]).to.match(/^until \d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 1 min\)$/);
      expect(cooling.slice(7, 10)).to.deep.equal(['0', '3', 'provider_error × 2 lost_account × 1']);
      expect(cooling[10]).to.equal('— / —');
      // An account the provider stopped answering.
      await services().db('provider_accounts').where({ label: coolingLabel }).update({ failures: 5, circuit_opened_at: services().db.fn.now() });
      expect(rowCells(await (await get('/ops/pool')).text(), 'account', coolingLabel)[2]).to.equal('not answering');
      await services().db('provider_accounts').where({ label: coolingLabel }).update({ failures: 0, circuit_opened_at: null });
      expect(page).to.contain('<strong id="slots-leased">4</strong>').and.contain('<strong id="slots-free">2</strong>');
    });

    it('queues and generations: pg-boss queue sizes and generations per hour of the last 24', async () => {
      await services().boss.deleteAllJobs('push-send');
      await services().boss.send('push-send', { test: true });
      await services().boss.send('push-send', { test: true }, { startAfter: 3600 });
      try {
        const page = await (await get('/ops/activity')).text();
        expect(rowCells(page, 'queue', 'push-send').slice(1, 3)).to.deep.equal(['1', '1']);
        expect(rowCells(page, 'queue', 'generation-media').slice(1, 3)).to.deep.equal(['0', '0']);
        const hourOf = (minutes: number) => { const at = new Date(Date.now() - minutes * 60_000); at.setUTCMinutes(0, 0, 0); return at.toISOString(); };
        const { rows } = await services().db.raw(
          `select date_trunc('hour', finished_at) as hour, count(*) filter (where status = 'succeeded')::int as succeeded, count(*) filter (where status = 'failed')::int as failed
           from generations group by 1`,
        );
        for (const row of rows as { hour: Date; succeeded: number; failed: number }[]) {
          const cells = rowCells(page, 'hour', row.hour.toISOString());
          expect(cells.slice(2), row.hour.toISOString()).to.deep.equal([String(row.succeeded), String(row.failed)]);
        }
        const { rows: [created] } = await services().db.raw("select count(*)::int as count from generations where date_trunc('hour', created_at) = date_trunc('hour', now())");
        expect(rowCells(page, 'hour', hourOf(0))[1]).to.equal(String(created.count));
        expect(page).to.contain('<strong id="generations-pending">0</strong>').and.contain('<strong id="generations-processing">0</strong>');
        expect(page.match(/<tr data-hour=/g)).to.have.length(24);
        expect(page).to.match(/<svg class="chart"[^>]*role="img"/);
      } finally {
        await services().boss.deleteAllJobs('push-send');
      }
    });

    it('failed generations: counts by error code over 24 h and the latest with a replay form each', async () => {
      const page = await (await get('/ops/failed')).text();
      expect(rowCells(page, 'code', 'provider_error').slice(0, 3)).to.deep.equal(['provider_error', '4', '4']);
      expect(rowCells(page, 'code', 'safety').slice(0, 3)).to.deep.equal(['safety', '1', '1']);
      expect(rowCells(page, 'code', 'lost_account').slice(0, 3)).to.deep.equal(['lost_account', '1', '1']);
      for (const failed of [...data.failed.providerError, data.failed.safety]) {
        expect(rowCells(page, 'generation', failed.id)[3]).to.equal(failed.userId);
        expect(rowCells(page, 'generation', failed.id)[5]).to.equal('Replay');
      }
      const filtered = await (await get('/ops/failed?code=safety')).text();
      expect(filtered.match(/<tr data-generation=/g)).to.have.length(1);
      expect(rowCells(filtered, 'generation', data.failed.safety.id)[1]).to.equal('safety');
    });

    it('payments that need attention: open longer than 15 minutes, each with why', async () => {
      const page = await (await get('/ops/payments')).text();
      expect(rowCells(page, 'payment', data.payments.noOrder)[1]).to.equal('no order registered');
      expect(rowCells(page, 'payment', data.payments.pastExpiry)[1]).to.equal('outcome unknown past expiry');
      expect(rowCells(page, 'payment', data.payments.checkOverdue)[1]).to.equal('status check overdue');
      expect(rowCells(page, 'payment', data.payments.waiting)[1]).to.equal('waiting for the payer');
      expect(page).not.to.contain(data.payments.recent);
      expect(page).to.contain('<strong id="payments-open">4</strong>');
    });

    it('the overview: one figure per page', async () => {
      const page = await (await get('/ops')).text();
      expect(page).to.contain('<strong id="overview-slots">4 / 6</strong>');
      expect(page).to.contain('<strong id="overview-failed">6</strong>');
      expect(page).to.contain('<strong id="overview-payments">4</strong>');
    });
  });

  describe('replay', () => {
    let data: ConsoleData;
    beforeEach(async () => {
      await resetDatabase();
      data = await seedConsoleData();
    });

    async function replayForm(form: Record<string, string>) {
      const token = formTokenOf(await (await get('/ops/failed')).text());
      return post('/ops/failed/replay', { csrf: token, ...form }, { origin: app.url });
    }

    const attemptsOf = async (userId: string) => services().db('generations').where({ user_id: userId }).orderBy('created_at').select('id', 'status');

    it('replays one failed generation as a new attempt, once: a second post creates nothing and charges nothing', async () => {
      const target = data.failed.providerError[0];
      expect(await balanceOf(target.userId)).to.equal(50);
      const first = await replayForm({ id: target.id });
      expect(first.status).to.equal(200);
      const page = await first.text();
      const { replayed_as: newId } = await services().db('generations').where({ id: target.id }).first('replayed_as');
      expect(newId).to.be.a('string');
      expect(rowCells(page, 'generation', target.id)).to.deep.equal([target.id, 'replayed', newId, 'cost 10']);
      expect(page).to.contain('1 replayed, 0 already replayed before, 0 skipped.');
      expect(await attemptsOf(target.userId)).to.deep.equal([{ id: target.id, status: 'failed' }, { id: newId, status: 'pending' }]);
      expect(await balanceOf(target.userId)).to.equal(40);

      const second = await (await replayForm({ id: target.id })).text();
      expect(rowCells(second, 'generation', target.id)).to.deep.equal([target.id, 'already replayed', newId, '']);
      expect(await attemptsOf(target.userId)).to.have.length(2);
      expect(await balanceOf(target.userId)).to.equal(40);
      // The failure's row now names its attempt instead of offering a replay.
      expect(rowCells(await (await get('/ops/failed')).text(), 'generation', target.id)[5]).to.equal(`replayed as ${newId}`);
    });

    it('two replays of the same failure at the same time make one attempt', async () => {
      const target = data.failed.providerError[0];
      const pages = await Promise.all([1, 2, 3].map(async () => (await replayForm({ id: target.id })).text()));
      const actions = pages.map((page) => rowCells(page, 'generation', target.id)[1]).sort();
      expect(actions).to.deep.equal(['already replayed', 'already replayed', 'replayed']);
      expect(await attemptsOf(target.userId)).to.have.length(2);
      expect(await balanceOf(target.userId)).to.equal(40);
    });

    it('"replay all" of an error code replays the not yet replayed failures of that code in the last 24 h, and names what it skipped', async () => {
      const [first, second] = data.failed.providerError;
      await services().db('users').where({ id: second.userId }).update({ balance: 3 });
      const page = await (await replayForm({ error_code: 'provider_error' })).text();
      expect(rowCells(page, 'generation', first.id)[1]).to.equal('replayed');
      expect(rowCells(page, 'generation', second.id).slice(1)).to.deep.equal(['skipped', '—', 'the user cannot pay 10 (balance 3)']);
      expect(await attemptsOf(data.failed.safety.userId)).to.have.length(1);
      expect(await attemptsOf(first.userId)).to.have.length(2);
    });

    it('a generation that is not a failed one replays nothing', async () => {
      const page = await (await replayForm({ id: '00000000-0000-4000-8000-000000000000' })).text();
      expect(page).to.contain('Nothing to replay');
    });

    it('a form without id or error_code, with both, or with a malformed one is 422 and changes nothing', async () => {
      const target = data.failed.providerError[0].id;
      const forms: Record<string, string>[] = [{}, { id: target, error_code: 'provider_error' }, { id: 'not-a-uuid' }, { error_code: 'DROP TABLE' }, { error_code: 'x'.repeat(65) }];
      for (const form of forms) {
        const answer = await replayForm(form);
        expect(answer.status, JSON.stringify(form)).to.equal(422);
        expect(((await answer.json()) as any).error.code).to.equal('validation_error');
      }
      expect(await services().db('generations').whereNotNull('replayed_as').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    describe('cross-site protection', () => {
      const refusals = crossSiteRefusals('/ops/failed');
      for (const [what, tokenField, headers] of refusals) {
        it(`${what}: 403, nothing replayed`, async () => {
          const target = data.failed.providerError[0];
          const answer = await post('/ops/failed/replay', { id: target.id, ...(await tokenField()) }, headers());
          expect(answer.status).to.equal(403);
          expect(((await answer.json()) as any).error.code).to.equal('forbidden');
          expect(await services().db('generations').where({ id: target.id }).first('replayed_as')).to.deep.equal({ replayed_as: null });
          expect(await attemptsOf(target.userId)).to.have.length(1);
        });
      }

      it('the form of a page, posted from the console (same origin, PUBLIC_BASE_URL, or a client that sends no Origin), is accepted', async () => {
        const [first, second] = data.failed.providerError;
        const token = formTokenOf(await (await get('/ops/failed')).text());
        expect((await post('/ops/failed/replay', { id: first.id, csrf: token }, { origin: new URL(app.services.config.publicBaseUrl).origin })).status).to.equal(200);
        // A browser's form from a page under Referrer-Policy: no-referrer: Origin null, Sec-Fetch-Site same-origin.
        expect((await post('/ops/failed/replay', { id: second.id, csrf: token }, { 'sec-fetch-site': 'same-origin', origin: 'null' })).status).to.equal(200);
        expect(await services().db('generations').whereNotNull('replayed_as').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 2 }]);
      });
    });
  });

  describe('the marketplace: moderation queue and archive', () => {
    let market: MarketplaceData;
    const db = () => services().db;
    const statusOf = async (id: string) => (await db()('user_effects').where({ id }).first('status', 'archived_by', 'archive_reason'));
    const removedPushes = async () => (await jobsOf('push-send', { kind: 'effect_removed' }))
      .map((job) => ({ reference: job.data.reference, userId: job.data.userId }));
    const earningStatuses = async () => Object.fromEntries((await db()('user_effect_earnings').where({ user_effect_id: market.live.earning }).select('id', 'status'))
      .map((row: { id: string; status: string }) => [row.id, row.status]));
    const listed = (page: string, attribute: string) => [...page.matchAll(new RegExp(`<tr data-${attribute}="([^"]+)"`, 'g'))].map((match) => match[1]);

    beforeEach(async () => {
      await resetDatabase();
      await seedConsoleData();
      market = await seedMarketplace();
    });

    async function archiveForm(form: Record<string, string | string[]>, headers: Record<string, string> = { origin: app.url }) {
      const token = formTokenOf(await (await get('/ops/marketplace')).text());
      const body = new URLSearchParams({ csrf: token });
      for (const [name, value] of Object.entries(form)) for (const one of [value].flat()) body.append(name, one);
      return fetch(`${app.url}/ops/marketplace/archive`, {
        method: 'POST',
        headers: { ...operatorHeaders, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: body.toString(),
        redirect: 'manual',
      });
    }

    it('the moderation queue: every processing user effect, oldest round first, with its stage, slot, tries and wait; the counts', async () => {
      const page = await (await get('/ops/marketplace')).text();
      const { slow, withModel, verdict, gaveUp, republished } = market.queued;
      expect(listed(page, 'queued')).to.deep.equal([slow, withModel, verdict, gaveUp, republished]);
      const cells = (id: string) => rowCells(page, 'queued', id);
      expect(cells(slow).slice(0, 6)).to.deep.equal([`Slow portrait ${slow}`, `Ada &#60;b&#62;Author&#60;/b&#62; ${market.authorId.slice(0, 8)}…`, 'image · public', '1', 'waiting for a provider slot', '7']);
      expect(cells(slow)[6]).to.match(/^40 min \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      expect(cells(withModel).slice(4, 6)).to.deep.equal(['with the moderation model slot busy…001 #3', '0']);
      expect(cells(withModel)[6]).to.match(/^10 min /);
      expect(cells(verdict).slice(4, 6)).to.deep.equal(['approved, preview being built', '0']);
      expect(cells(gaveUp).slice(2, 5)).to.deep.equal(['image · private', '1', 'moderation job failed']);
      // Published again from private: round 2, in line by the publish, not by its creation two days ago.
      expect(cells(republished).slice(3, 5)).to.deep.equal(['2', 'waiting for a provider slot']);
      expect(cells(republished)[6]).to.match(/^\d+ s /);
      expect(page).to.contain('<strong id="moderation-waiting">5</strong>waiting for moderation, the oldest for 40 min');
      expect(page).to.match(/<div class="figure bad"><strong id="moderation-slow">1<\/strong>/);
      expect(page).to.contain('<strong id="moderation-now">1</strong>').and.contain('<strong id="live-count">3</strong>');
      // The queue rows offer no archive of their own; the by-id form does.
      expect(page.match(/<tr data-queued="[^"]+">[\s\S]*?<\/tr>/g)!.join('')).not.to.contain('<form');
    });

    it('live effects: approved ones newest first, each with an Archive form (token, id, a required reason); other statuses in neither list', async () => {
      const page = await (await get('/ops/marketplace')).text();
      const { scripted, recent, earning } = market.live;
      expect(listed(page, 'live')).to.deep.equal([scripted, recent, earning]);
      const cells = rowCells(page, 'live', earning);
      expect([cells[0], cells[2], ...cells.slice(4)]).to.deep.equal([`Old favourite ${earning}`, 'image', '0', '2 (5 cr.)', 'Archive']);
      expect(cells[3]).to.match(/^3 h 0 min ago \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      expect(rowCells(page, 'live', recent)[5]).to.equal('0');
      expect(rowCells(page, 'live', scripted)[3]).to.match(/^\d+ s ago \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      const form = new RegExp(`<tr data-live="${recent}">[\\s\\S]*?</tr>`).exec(page)![0];
      expect(form).to.contain('<form class="archive" method="post" action="/ops/marketplace/archive">');
      expect(form).to.match(/<input type="hidden" name="csrf" value="\d+\.[A-Za-z0-9_-]{43}">/);
      expect(form).to.contain(`<input type="hidden" name="id" value="${recent}">`);
      expect(form).to.contain('<input type="text" name="reason" required maxlength="1000" pattern=".*\\S.*"');
      for (const id of Object.values(market.elsewhere)) expect(page).not.to.contain(id);
    });

    it('a user effect\'s name and its author\'s name are shown as text, escaped', async () => {
      const page = await (await get('/ops/marketplace')).text();
      expect(page).not.to.contain(scriptedName).and.not.to.contain('<b>Author');
      expect(page).to.contain('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; co');
      expect(page).to.contain('Ada &#60;b&#62;Author&#60;/b&#62;');
      expect(page).to.contain(`title="${market.authorId}"`);
      expect(rowCells(page, 'live', market.live.scripted)[0]).to.equal(`&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; co ${market.live.scripted}`);
      expect(page).not.to.match(/<script|\son[a-z]+=|style="/i);
    });

    it('the overview: user effects waiting for moderation, red while one waits longer than 15 min, a link to the page', async () => {
      const page = await (await get('/ops')).text();
      expect(page).to.contain('<a class="figure bad" href="/ops/marketplace"><strong id="overview-moderation">5</strong>user effects waiting for moderation, 1 longer than 15 min</a>');
      await db()('user_effects').where({ id: market.queued.slow }).update({ submitted_at: new Date() });
      expect(await (await get('/ops')).text()).to.contain('<a class="figure" href="/ops/marketplace"><strong id="overview-moderation">5</strong>user effects waiting for moderation</a>');
    });

    it('Archive: archived by the operator with the reason, pending earnings reversed (settled stay), one push to the author, out of the live list; 303 back with what happened', async () => {
      const { earning } = market.live;
      const answer = await archiveForm({ id: earning.toUpperCase(), reason: '  stolen sample  ' });
      expect(answer.status).to.equal(303);
      expect(answer.headers.get('location')).to.equal(`/ops/marketplace?archived=${earning}`);
      expect(await statusOf(earning)).to.deep.equal({ status: 'archived', archived_by: 'operator', archive_reason: 'stolen sample' });
      expect(await earningStatuses()).to.deep.equal({ [market.earnings.pending[0]]: 'reversed', [market.earnings.pending[1]]: 'reversed', [market.earnings.settled]: 'settled' });
      expect(await removedPushes()).to.deep.equal([{ reference: earning, userId: market.authorId }]);
      const { effect_id: effectId } = await db()('user_effects').where({ id: earning }).first('effect_id');
      expect(await db()('effects').where({ id: effectId }).first('hidden')).to.deep.equal({ hidden: true });

      const page = await (await get(answer.headers.get('location')!)).text();
      expect(page).to.contain(`<p class="flash ok" id="flash" role="status">Archived “Old favourite” (<span class="mono">${earning}</span>) by an operator: “stolen sample”. 2 pending earnings reversed (5 credits); the author is told by push.</p>`);
      expect(listed(page, 'live')).to.deep.equal([market.live.scripted, market.live.recent]);
      expect(page).to.contain('<strong id="live-count">2</strong>');
      // Nothing else moved.
      for (const id of [...Object.values(market.queued), market.live.scripted, market.live.recent]) expect((await statusOf(id)).status).to.not.equal('archived');
    });

    it('a reason of exactly 1000 characters is kept; one of 1001 is 422', async () => {
      expect((await archiveForm({ id: market.live.recent, reason: 'x'.repeat(1001) })).status).to.equal(422);
      expect((await archiveForm({ id: market.live.recent, reason: 'y'.repeat(1000) })).status).to.equal(303);
      expect((await statusOf(market.live.recent)).archive_reason).to.equal('y'.repeat(1000));
    });

    it('archiving again, or a user effect its author removed, changes nothing and says so: 303 to ?already_archived', async () => {
      const { recent } = market.live;
      expect((await archiveForm({ id: recent, reason: 'spam' })).status).to.equal(303);
      const again = await archiveForm({ id: recent, reason: 'another reason' });
      expect(again.status).to.equal(303);
      expect(again.headers.get('location')).to.equal(`/ops/marketplace?already_archived=${recent}`);
      expect(await statusOf(recent)).to.deep.equal({ status: 'archived', archived_by: 'operator', archive_reason: 'spam' });
      expect(await removedPushes()).to.have.length(1);
      const page = await (await get(again.headers.get('location')!)).text();
      expect(page).to.contain(`<p class="flash wait" id="flash" role="status">“Recent hit” (<span class="mono">${recent}</span>) was archived already by an operator: “spam”. Nothing changed.</p>`);

      const byAuthor = market.elsewhere.archived;
      const removed = await archiveForm({ id: byAuthor, reason: 'spam' });
      expect(removed.headers.get('location')).to.equal(`/ops/marketplace?already_archived=${byAuthor}`);
      expect(await statusOf(byAuthor)).to.deep.equal({ status: 'archived', archived_by: 'author', archive_reason: null });
      expect(await (await get(removed.headers.get('location')!)).text()).to.contain('was archived already by its author. Nothing changed.');
      expect(await removedPushes()).to.have.length(1);
    });

    it('an unknown id archives nothing: 303 to ?not_found, and the page says so', async () => {
      const unknown = '00000000-0000-4000-8000-000000000000';
      const answer = await archiveForm({ id: unknown, reason: 'spam' });
      expect(answer.status).to.equal(303);
      expect(answer.headers.get('location')).to.equal(`/ops/marketplace?not_found=${unknown}`);
      const page = await (await get(answer.headers.get('location')!)).text();
      expect(page).to.contain(`<p class="flash bad" id="flash" role="status">No user effect <span class="mono">${unknown}</span>: nothing archived.</p>`);
      expect(await db()('user_effects').where({ archived_by: 'operator' }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
      expect(await removedPushes()).to.deep.equal([]);
    });

    it('any status but archived may be archived by id, as with the CLI: a round in the queue stops there', async () => {
      const { slow } = market.queued;
      expect((await archiveForm({ id: slow, reason: 'offensive name' })).headers.get('location')).to.equal(`/ops/marketplace?archived=${slow}`);
      expect((await statusOf(slow)).status).to.equal('archived');
      expect(listed(await (await get('/ops/marketplace')).text(), 'queued')).not.to.include(slow);
    });

    it('a flash names what the user effect is now: a link that claims an archive of a live effect or of one its author removed, or a malformed id, shows none', async () => {
      for (const query of [`archived=${market.live.recent}`, `archived=${market.elsewhere.archived}`, 'archived=not-a-uuid', `already_archived=${market.live.recent}`, 'not_found=%3Cscript%3E']) {
        const page = await (await get(`/ops/marketplace?${query}`)).text();
        expect(page, query).not.to.contain('id="flash"');
      }
    });

    it('two archives of the same effect at the same time: archived once, earnings reversed once, one push', async () => {
      const { earning } = market.live;
      const answers = await Promise.all([1, 2, 3].map(() => archiveForm({ id: earning, reason: 'duplicate' })));
      expect(answers.map((answer) => answer.status)).to.deep.equal([303, 303, 303]);
      expect(answers.map((answer) => answer.headers.get('location')).sort()).to.deep.equal([
        `/ops/marketplace?already_archived=${earning}`, `/ops/marketplace?already_archived=${earning}`, `/ops/marketplace?archived=${earning}`]);
      expect(await removedPushes()).to.have.length(1);
      expect(Object.values(await earningStatuses()).sort()).to.deep.equal(['reversed', 'reversed', 'settled']);
      const reversedAt = await db()('user_effect_earnings').where({ user_effect_id: earning, status: 'reversed' }).distinct('reversed_at');
      expect(reversedAt).to.have.length(1);
    });

    it('a form without an id, a malformed id, a missing, blank, too long, NUL-bearing or repeated reason is 422 and changes nothing', async () => {
      const { recent } = market.live;
      const forms: [Record<string, string | string[]>, string[]][] = [
        [{}, ['id', 'reason']],
        [{ reason: 'spam' }, ['id']],
        [{ id: 'not-a-uuid', reason: 'spam' }, ['id']],
        [{ id: `${recent}x`, reason: 'spam' }, ['id']],
        [{ id: recent }, ['reason']],
        [{ id: recent, reason: '' }, ['reason']],
        [{ id: recent, reason: ' \t\n ' }, ['reason']],
        [{ id: recent, reason: 'x'.repeat(1001) }, ['reason']],
        [{ id: recent, reason: 'spam\u0000' }, ['reason']],
        [{ id: recent, reason: ['spam', 'again'] }, ['reason']],
        [{ id: [recent, market.live.earning], reason: 'spam' }, ['id']],
      ];
      for (const [form, fields] of forms) {
        const answer = await archiveForm(form);
        expect(answer.status, JSON.stringify(form)).to.equal(422);
        const body = (await answer.json()) as { error: { code: string; details: { loc: string[] }[] } };
        expect(body.error.code).to.equal('validation_error');
        expect(body.error.details.map((detail) => detail.loc[1]), JSON.stringify(form)).to.deep.equal(fields);
      }
      expect(await db()('user_effects').where({ status: 'archived' }).pluck('id')).to.deep.equal([market.elsewhere.archived]);
      expect(await removedPushes()).to.deep.equal([]);
    });

    describe('cross-site protection', () => {
      const refusals = crossSiteRefusals('/ops/marketplace');
      for (const [what, tokenField, headers] of refusals) {
        it(`${what}: 403, nothing archived, no push`, async () => {
          const { earning } = market.live;
          const answer = await post('/ops/marketplace/archive', { id: earning, reason: 'forged', ...(await tokenField()) }, headers());
          expect(answer.status).to.equal(403);
          expect(((await answer.json()) as { error: { code: string } }).error.code).to.equal('forbidden');
          expect((await statusOf(earning)).status).to.equal('approved');
          expect(Object.values(await earningStatuses()).sort()).to.deep.equal(['pending', 'pending', 'settled']);
          expect(await removedPushes()).to.deep.equal([]);
        });
      }
    });
  });

  describe('the pg-boss dashboard at /ops/queues', () => {
    it('answers its pages and their assets under the prefix, with a policy of its own', async () => {
      await resetDatabase();
      const answer = await get('/ops/queues');
      expect(answer.status).to.equal(200);
      const page = await answer.text();
      expect(answer.headers.get('content-security-policy')).to.contain("default-src 'self'").and.contain("frame-ancestors 'none'");
      expect(answer.headers.get('referrer-policy')).to.equal('same-origin');
      const assets = [...page.matchAll(/(?:href|src)="(\/ops\/queues\/assets\/[^"]+)"/g)].map((match) => match[1]);
      expect(assets.length).to.be.greaterThan(0);
      expect(page).not.to.match(/(?:href|src)="\/assets\//);
      for (const asset of new Set(assets)) {
        expect((await get(asset)).status, asset).to.equal(200);
        expect((await fetch(app.url + asset)).status, asset).to.equal(401);
      }
      const data = await get('/ops/queues.data');
      expect(data.status).to.equal(200);
      expect((await get('/ops/queues/queues')).status).to.equal(200);
      // A path the dashboard does not know is its own 404 page, not an error of the app.
      const unknown = await get('/ops/queues/no-such-page');
      expect(unknown.status).to.equal(404);
      expect(unknown.headers.get('content-security-policy')).to.contain("default-src 'self'");
    });

    it('refuses a dashboard action posted from another site', async () => {
      const answer = await fetch(`${app.url}/ops/queues/queues/create`, {
        method: 'POST',
        headers: { ...operatorHeaders, origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
        body: 'name=forged-queue',
      });
      expect(answer.status).to.equal(403);
      expect(await services().boss.getQueue('forged-queue')).to.equal(null);
    });
  });
});
