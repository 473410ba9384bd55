import { expect } from 'chai';
import type { Response } from 'playwright-core';
import { laptop, layoutFacts, phone, screenshot, useBrowser, visit, type Visit, type VisitOptions } from '../../browser';
import { resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { operator, opsConfig, scriptedName, seedConsoleData, seedMarketplace, type ConsoleData } from './ops-fixtures';
import { jobsOf } from '../../jobs';

/**
 * The operator console in real Chromium (Debian's, through playwright-core): what an operator sees
 * on each page, on a laptop and on a phone, under the pages' strict policy; a replay clicked on
 * the page makes the new attempt; the pg-boss dashboard loads and hydrates under /ops/queues.
 * Screenshots: `docs/screenshots/ops-*.png` (UPDATE_SCREENSHOTS=1, `npm run screenshots`).
 */
describe('operator console in Chromium', function () {
  this.timeout(60_000);
  const chromium = useBrowser();
  let app: TestApp;
  let data: ConsoleData;
  const visits: Visit[] = [];
  const signedIn = { httpCredentials: { username: operator.user, password: operator.password } };

  before(async () => {
    app = await startTestApp({ config: opsConfig });
  });
  after(() => app.close());
  beforeEach(async () => {
    await resetDatabase();
    data = await seedConsoleData();
  });
  afterEach(async () => {
    for (const opened of visits.splice(0)) await opened.close();
  });

  async function open(path: string, options: VisitOptions = {}): Promise<Visit & { failures: string[] }> {
    const opened = await visit(chromium.browser, app.url + path, { locale: 'en-US', viewport: laptop, ...signedIn, ...options });
    visits.push(opened);
    const failures: string[] = [];
    // A fetch the page itself cancels (a client navigation superseding a data request) is no failure.
    opened.page.on('requestfailed', (request) => {
      if (request.failure()?.errorText !== 'net::ERR_ABORTED') failures.push(`${request.url()} ${request.failure()?.errorText}`);
    });
    opened.page.on('response', (response: Response) => {
      if (response.status() >= 400) failures.push(`${response.url()} ${response.status()}`);
    });
    return Object.assign(opened, { failures });
  }

  async function expectConsolePage(opened: Visit, heading: string): Promise<void> {
    expect(opened.response.status()).to.equal(200);
    expect(opened.response.headers()['content-security-policy']).to.match(/^default-src 'none'/);
    expect(await opened.page.textContent('h1')).to.equal(heading);
    expect(await opened.page.getAttribute('nav a[aria-current=page]', 'href')).to.be.a('string');
    const facts = await layoutFacts(opened.page);
    expect(facts.scrollWidth, 'no sideways scroll of the page').to.be.at.most(facts.innerWidth);
    expect(facts.fontFamily).to.match(/^system-ui/);
    expect(await opened.violations()).to.deep.equal([]);
  }

  const cellText = async (opened: Visit, row: string, column: number) => (await opened.page.locator(`${row} td`).nth(column).innerText()).trim();

  it('asks for credentials: without them (or with wrong ones) the browser gets 401 with a Basic challenge and no page', async () => {
    for (const httpCredentials of [undefined, { username: operator.user, password: 'not-the-password-0123' }]) {
      const context = await chromium.browser.newContext({ httpCredentials });
      try {
        const page = await context.newPage();
        const challenges: { status: number; challenge: string | undefined }[] = [];
        page.on('response', (response) => challenges.push({ status: response.status(), challenge: response.headers()['www-authenticate'] }));
        // Headless Chromium has nobody to ask: without credentials the navigation ends in its
        // credentials error; with wrong ones it shows the 401 answer after trying them.
        const shown = await page.goto(`${app.url}/ops/failed`).catch((error: Error) => {
          expect(error.message).to.contain('ERR_INVALID_AUTH_CREDENTIALS');
          return null;
        });
        if (shown) {
          expect(shown.status()).to.equal(401);
          expect(await shown.text()).not.to.contain(data.failed.safety.id);
        }
        expect(challenges.length).to.be.greaterThan(0);
        for (const answer of challenges) expect(answer).to.deep.equal({ status: 401, challenge: 'Basic realm="operator console", charset="UTF-8"' });
      } finally {
        await context.close();
      }
    }
  });

  it('the overview shows one figure per page, each a link to it', async () => {
    const opened = await open('/ops');
    await expectConsolePage(opened, 'Overview');
    expect(await opened.page.innerText('#overview-slots')).to.equal('4 / 6');
    expect(await opened.page.innerText('#overview-failed')).to.equal('6');
    expect(await opened.page.innerText('#overview-payments')).to.equal('4');
    await opened.page.click('a.figure[href="/ops/pool"]');
    expect(await opened.page.textContent('h1')).to.equal('Provider pool');
    await opened.page.goBack();
    await screenshot(opened.page, 'ops-overview');
  });

  it('the provider pool: slots leased and free, the cool-down, errors and latency per account', async () => {
    const opened = await open('/ops/pool');
    await expectConsolePage(opened, 'Provider pool');
    const busy = 'tr[data-account="busy…001"]';
    const cooling = 'tr[data-account="cool…002"]';
    expect([await cellText(opened, busy, 4), await cellText(opened, busy, 5)]).to.deep.equal(['3', '1']);
    expect(await cellText(opened, busy, 10)).to.equal('20 s / 29 s');
    expect(await cellText(opened, cooling, 1)).to.equal('simulator');
    expect(await cellText(opened, cooling, 2)).to.equal('cooling down');
    expect(await cellText(opened, cooling, 6)).to.match(/^until .* UTC \(in 1 min\)$/);
    expect(await cellText(opened, cooling, 9)).to.equal('provider_error × 2 lost_account × 1');
    await screenshot(opened.page, 'ops-pool');
  });

  it('queues and generations: the queue table, the hourly chart and table', async () => {
    const opened = await open('/ops/activity');
    await expectConsolePage(opened, 'Queues and generations');
    expect(await opened.page.locator('tr[data-queue]').count()).to.be.greaterThan(5);
    expect(await opened.page.locator('tr[data-hour]').count()).to.equal(24);
    const bars = opened.page.locator('svg.chart rect');
    expect(await bars.count()).to.equal(72);
    const chart = (await opened.page.locator('svg.chart').boundingBox())!;
    expect(chart.width).to.be.greaterThan(600);
    await screenshot(opened.page, 'ops-activity');
  });

  it('failed generations: a replay clicked on the page creates the new attempt, once', async () => {
    const target = data.failed.providerError[0];
    const opened = await open('/ops/failed');
    await expectConsolePage(opened, 'Failed generations');
    expect(await cellText(opened, 'tr[data-code="provider_error"]', 1)).to.equal('4');
    await screenshot(opened.page, 'ops-failed');

    await opened.page.click(`tr[data-generation="${target.id}"] button`);
    await opened.page.waitForSelector('#replay-summary');
    expect(await opened.page.innerText('#replay-summary')).to.equal('1 replayed, 0 already replayed before, 0 skipped.');
    const { replayed_as: newId } = await services().db('generations').where({ id: target.id }).first('replayed_as');
    expect(newId).to.be.a('string');
    expect(await cellText(opened, `tr[data-generation="${target.id}"]`, 2)).to.equal(newId);
    expect(await services().db('generations').where({ id: newId }).first('status', 'user_id')).to.deep.equal({ status: 'pending', user_id: target.userId });
    expect(await opened.violations()).to.deep.equal([]);
    await screenshot(opened.page, 'ops-replay');

    // Back on the list, the failure names its attempt and offers no second replay.
    await opened.page.click('a[href="/ops/failed"].button');
    expect(await cellText(opened, `tr[data-generation="${target.id}"]`, 5)).to.equal(`replayed as ${newId}`);
    expect(await opened.page.locator(`tr[data-generation="${target.id}"] button`).count()).to.equal(0);
    // The browser's back button re-posting the old form replays nothing more.
    await opened.page.goBack();
    await opened.page.reload();
    expect(await services().db('generations').where({ user_id: target.userId }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 2 }]);
  });

  it('payments that need attention, each with why it is still open', async () => {
    const opened = await open('/ops/payments');
    await expectConsolePage(opened, 'Payments that need attention');
    expect(await opened.page.innerText('#payments-open')).to.equal('4');
    expect(await cellText(opened, `tr[data-payment="${data.payments.pastExpiry}"]`, 1)).to.equal('outcome unknown past expiry');
    expect(await cellText(opened, `tr[data-payment="${data.payments.noOrder}"]`, 1)).to.equal('no order registered');
    await screenshot(opened.page, 'ops-payments');
  });

  it('the marketplace: the moderation queue oldest first; an Archive clicked on the page takes the effect out of the live list, once', async () => {
    const market = await seedMarketplace();
    const { db } = services();
    // Tall enough to show both lists in the screenshot.
    const opened = await open('/ops/marketplace', { viewport: { ...laptop, height: 1180 } });
    await expectConsolePage(opened, 'Marketplace moderation');
    expect(await opened.page.innerText('#moderation-waiting')).to.equal('5');
    const queued = await opened.page.locator('tr[data-queued]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-queued')));
    const { slow, withModel, verdict, gaveUp, republished } = market.queued;
    expect(queued).to.deep.equal([slow, withModel, verdict, gaveUp, republished]);
    expect(await cellText(opened, `tr[data-queued="${withModel}"]`, 4)).to.equal('with the moderation model\nslot busy…001 #3');
    expect(await cellText(opened, `tr[data-queued="${slow}"]`, 6)).to.match(/^40 min\n\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    // What a user typed is shown as they typed it, never run.
    expect(await cellText(opened, `tr[data-live="${market.live.scripted}"]`, 0)).to.equal(`${scriptedName}\n${market.live.scripted}`);
    expect(opened.errors()).to.deep.equal([]);
    await screenshot(opened.page, 'ops-marketplace');

    const row = `tr[data-live="${market.live.earning}"]`;
    // Without a reason the browser does not send the form.
    await opened.page.click(`${row} button`);
    expect(await opened.page.locator(`${row} input[name=reason]`).evaluate((input) => (input as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing)).to.equal(true);
    expect(await db('user_effects').where({ id: market.live.earning }).first('status')).to.deep.equal({ status: 'approved' });

    await opened.page.fill(`${row} input[name=reason]`, 'stolen sample');
    await Promise.all([opened.page.waitForURL(/\/ops\/marketplace\?archived=/), opened.page.click(`${row} button`)]);
    expect(await opened.page.innerText('#flash')).to.equal(`Archived “Old favourite” (${market.live.earning}) by an operator: “stolen sample”. 2 pending earnings reversed (5 credits); the author is told by push.`);
    expect(await opened.page.locator(row).count()).to.equal(0);
    expect(await opened.page.locator('tr[data-live]').count()).to.equal(2);
    expect(await opened.page.innerText('#live-count')).to.equal('2');
    expect(await db('user_effects').where({ id: market.live.earning }).first('status', 'archived_by', 'archive_reason'))
      .to.deep.equal({ status: 'archived', archived_by: 'operator', archive_reason: 'stolen sample' });
    expect(await opened.violations()).to.deep.equal([]);
    await screenshot(opened.page, 'ops-marketplace-archived');

    // The page after the archive is a GET: reloading it archives nothing and sends no second push.
    await opened.page.reload();
    expect(await opened.page.innerText('#flash')).to.contain('Archived “Old favourite”');
    expect(await jobsOf('push-send', { kind: 'effect_removed' })).to.have.length(1);
  });

  it('on a phone: the navigation wraps, wide tables scroll inside their box, the page never sideways', async () => {
    await seedMarketplace();
    for (const path of ['/ops', '/ops/pool', '/ops/activity', '/ops/failed', '/ops/payments', '/ops/marketplace']) {
      const opened = await open(path, { viewport: phone });
      const facts = await layoutFacts(opened.page);
      expect(facts.innerWidth, path).to.equal(phone.width);
      expect(facts.scrollWidth, path).to.be.at.most(phone.width);
      expect(await opened.violations(), path).to.deep.equal([]);
      if (path === '/ops/failed') await screenshot(opened.page, 'ops-failed-phone');
    }
  });

  it('the pg-boss dashboard at /ops/queues loads its assets under the prefix and hydrates, with nothing blocked', async function () {
    // Its first request loads the dashboard's server bundle, and Chromium then hydrates a React app:
    // slow on a loaded machine.
    this.timeout(120_000);
    await services().boss.send('push-send', { from: 'the console test' });
    const opened = await open('/ops/queues');
    expect(opened.response.status()).to.equal(200);
    // A click on its own link is a client-side navigation: only a hydrated page makes it.
    await opened.page.getByRole('link', { name: 'Queues' }).first().click({ timeout: 90_000 }).catch(async (error: Error) => {
      throw new Error(`${error.message}\npage: ${(await opened.page.innerText('body')).slice(0, 2000)}\nerrors: ${opened.errors().join('\n')}`);
    });
    await opened.page.waitForURL(/\/ops\/queues\/queues/, { timeout: 90_000 });
    await opened.page.waitForSelector('text=push-send', { timeout: 90_000 });
    expect(opened.failures).to.deep.equal([]);
    // Its one request off this origin, a Google Fonts stylesheet, is blocked on purpose: the console
    // works offline and tells no third party who operates it (the dashboard falls back to system fonts).
    const violations = await opened.violations();
    expect(violations.length).to.be.greaterThan(0);
    for (const violation of violations) expect(violation).to.contain('https://fonts.googleapis.com/');
    await screenshot(opened.page, 'ops-queues');
  });
});
