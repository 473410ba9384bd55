import { expect } from 'chai';
import { layoutFacts, phone, screenshot, useBrowser, visit, type Visit } from '../browser';
import { services, startTestApp, type TestApp } from '../harness';
import { createPayment, freshShowcase, startTestbed, type Testbed } from '../payment-testbed';
import { makeUser } from '../users';

/**
 * The pages people see on their phones, in real Chromium at 390x844: what they read, where the app
 * button leads, that nothing is wider than the screen, and that the strict Content-Security-Policy
 * blocks nothing the page itself needs. Screenshots: `docs/screenshots/` (UPDATE_SCREENSHOTS=1).
 */
describe('pages on a phone (Chromium)', function () {
  this.timeout(30_000);
  const chromium = useBrowser();
  let referrals: TestApp;
  let bed: Testbed;
  let products: Awaited<ReturnType<typeof freshShowcase>>;
  const visits: Visit[] = [];

  before(async () => {
    referrals = await startTestApp({ config: { APP_LINK_BASE: 'effectsapp://' } });
    bed = await startTestbed({ config: { APP_LINK_BASE: 'effectsapp://' } });
    // The processor sends the payer back to PUBLIC_BASE_URL: here, where the test app listens.
    bed.app.services.config = { ...bed.app.services.config, publicBaseUrl: bed.app.url };
  });
  after(async () => {
    await referrals.close();
    await bed.close();
  });
  beforeEach(async () => {
    products = await freshShowcase();
  });
  afterEach(async () => {
    for (const opened of visits.splice(0)) await opened.close();
  });

  async function open(url: string, options: Parameters<typeof visit>[2] = {}): Promise<Visit> {
    const opened = await visit(chromium.browser, url, options);
    visits.push(opened);
    return opened;
  }

  /** Everything a phone page must be, whatever it says. */
  async function expectPhonePage(opened: Visit, status = 200): Promise<void> {
    expect(opened.response.status()).to.equal(status);
    const headers = opened.response.headers();
    expect(headers['content-security-policy']).to.match(/default-src 'none'/).and.match(/style-src 'sha256-/);
    expect(headers['content-security-policy']).not.to.contain('unsafe-inline');
    expect(headers['x-frame-options']).to.equal('DENY');
    expect(headers['x-content-type-options']).to.equal('nosniff');
    expect(headers['referrer-policy']).to.equal('no-referrer');
    const facts = await layoutFacts(opened.page);
    expect(facts.innerWidth).to.equal(phone.width);
    expect(facts.scrollWidth, 'no horizontal scroll').to.be.at.most(facts.innerWidth);
    expect(facts.fontFamily).to.match(/^system-ui/);
    expect(await opened.violations()).to.deep.equal([]);
  }

  async function inviterWithCode(code: string): Promise<void> {
    const user = await makeUser();
    await services().db('users').where({ id: user.id }).update({ referral_code: code });
  }

  it('the invitation page speaks Russian to a Russian browser and opens the app on the code', async () => {
    await inviterWithCode('FRIEND24');
    const opened = await open(`${referrals.url}/r/friend24`, { locale: 'ru-RU' });
    await expectPhonePage(opened);
    expect(await opened.page.textContent('h1')).to.equal('Вас пригласили');
    expect(await opened.page.textContent('.code')).to.equal('FRIEND24');
    const button = opened.page.locator('#open-app');
    expect(await button.textContent()).to.equal('Открыть в приложении');
    expect(await button.getAttribute('href')).to.equal('effectsapp://r/FRIEND24');
    const box = (await button.boundingBox())!;
    expect(box.x + box.width, 'the button fits the screen').to.be.at.most(phone.width);
    expect(box.y + box.height, 'the button is above the fold').to.be.at.most(phone.height);
    await screenshot(opened.page, 'referral-ru');
  });

  it('the invitation page speaks English to an English browser, in dark mode too', async () => {
    await inviterWithCode('FRIEND24');
    const opened = await open(`${referrals.url}/r/FRIEND24`, { locale: 'en-GB', colorScheme: 'dark' });
    await expectPhonePage(opened);
    expect(await opened.page.textContent('h1')).to.equal('You are invited');
    expect(await opened.page.locator('#open-app').textContent()).to.equal('Open in the app');
    const background = await opened.page.evaluate('getComputedStyle(document.querySelector("main")).backgroundColor');
    expect(background).to.equal('rgb(26, 26, 34)');
    await screenshot(opened.page, 'referral-en-dark');
  });

  it('an unknown invitation is a 404 page, escaping what the link carried', async () => {
    const opened = await open(`${referrals.url}/r/${encodeURIComponent('<b>nope</b>')}?lang=en`);
    await expectPhonePage(opened, 404);
    expect(await opened.page.textContent('h1')).to.equal('Invitation not found');
    expect(await opened.page.locator('b').count()).to.equal(0);
    expect(await opened.page.locator('#open-app').getAttribute('href')).to.equal('effectsapp://');
  });

  it('the return page speaks the payer\'s profile language whatever the browser, with a way back to the app', async () => {
    const user = await makeUser({ locale: 'en' });
    const payment = await createPayment(bed, user, products.pack_100.id);
    const opened = await open(`${bed.app.url}/v1/payments/${payment.id}/return`, { locale: 'ru-RU' });
    await expectPhonePage(opened);
    expect(await opened.page.textContent('h1')).to.equal('Payment is being processed');
    const button = opened.page.locator('#open-app');
    expect(await button.textContent()).to.equal('Back to the app');
    expect(await button.getAttribute('href')).to.equal(`effectsapp://payments/${payment.id}/return`);
    await screenshot(opened.page, 'payment-return-en');
  });

  it('the fail page of a Russian-speaking payer, in dark mode', async () => {
    const user = await makeUser({ locale: 'ru' });
    const payment = await createPayment(bed, user, products.pack_100.id);
    const opened = await open(`${bed.app.url}/v1/payments/${payment.id}/fail`, { locale: 'en-US', colorScheme: 'dark' });
    await expectPhonePage(opened);
    expect(await opened.page.textContent('h1')).to.equal('Оплата не прошла');
    expect(await opened.page.locator('#open-app').getAttribute('href')).to.equal(`effectsapp://payments/${payment.id}/fail`);
    await screenshot(opened.page, 'payment-fail-ru-dark');
  });

  it('pays on the simulator\'s page and lands on the return page, nothing blocked on the way', async () => {
    const user = await makeUser({ locale: 'ru' });
    const payment = await createPayment(bed, user, products.pack_100.id);
    const opened = await open(payment.payment_url);
    await expectPhonePage(opened);
    expect(await opened.page.textContent('h1')).to.equal('Оплата заказа');
    await screenshot(opened.page, 'simulator-payment-ru');

    await Promise.all([opened.page.waitForURL(/\/return$/), opened.page.click('button[value="success"]')]);
    expect(new URL(opened.page.url()).pathname).to.equal(`/v1/payments/${payment.id}/return`);
    expect(await opened.page.textContent('h1')).to.equal('Оплата принята в обработку');
    expect(await opened.violations()).to.deep.equal([]);
  });

  it('the violation check is live: a style the policy does not allow is reported', async () => {
    const opened = await open(`${bed.app.url}/v1/payments/anything/return`);
    await opened.page.evaluate(`document.head.appendChild(Object.assign(document.createElement('style'), { textContent: 'body { color: red }' }))`);
    await opened.page.waitForTimeout(100);
    expect((await opened.violations()).join('\n')).to.match(/style-src/);
  });
});
