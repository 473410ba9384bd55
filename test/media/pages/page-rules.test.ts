import { expect } from 'chai';
import type { Route } from '../../../api/http/route';
import { createHash } from 'node:crypto';
import { loadConfig } from '../../../config';
import { appLink } from '../../../media/pages/app-link';
import { html } from '../../../media/pages/html';
import { chooseLanguage, languageOfAcceptLanguage } from '../../../media/pages/language';
import { startTestApp, type TestApp } from '../../harness';
import { createPayment, freshShowcase, startTestbed, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';

/** The rules of the browser pages that need no browser: languages, app links, headers, escaping. */
describe('browser pages: rules', () => {
  describe('page language', () => {
    const cases: [string | undefined, string | null][] = [
      ['ru-RU,ru;q=0.9,en;q=0.8', 'ru'],
      ['en-GB,en;q=0.9', 'en'],
      ['de-DE,de;q=0.9,en;q=0.7,ru;q=0.5', 'en'],
      ['de-DE, ru;q=0.3, en;q=0', 'ru'],
      ['fr', null],
      ['', null],
      [undefined, null],
    ];
    for (const [header, language] of cases) {
      it(`Accept-Language "${header}" gives ${language}`, () => {
        expect(languageOfAcceptLanguage(header)).to.equal(language);
      });
    }

    it('takes what is known of the user first, then ?lang, then the browser, then Russian', () => {
      expect(chooseLanguage({ known: 'en', lang: 'ru', acceptLanguage: 'ru' })).to.equal('en');
      expect(chooseLanguage({ known: null, lang: 'EN', acceptLanguage: 'ru' })).to.equal('en');
      expect(chooseLanguage({ lang: 'de', acceptLanguage: 'en-US' })).to.equal('en');
      expect(chooseLanguage({ lang: ['en'], acceptLanguage: 'fr' })).to.equal('ru');
    });
  });

  describe('app links', () => {
    it('joins a custom scheme or a universal link base with encoded segments', () => {
      expect(appLink('effectsapp://', 'r', 'AB12CD34')).to.equal('effectsapp://r/AB12CD34');
      expect(appLink('https://go.example.app/app', 'payments', 'x/y?', 'return')).to.equal('https://go.example.app/app/payments/x%2Fy%3F/return');
      expect(appLink('https://go.example.app/app/', 'r', 'A')).to.equal('https://go.example.app/app/r/A');
    });

    it('APP_LINK_BASE defaults to effectsapp:// and refuses schemes that run code', () => {
      const base = { DATA_DIR: '/tmp/effects-config-test', TOKEN_SECRET: 'x'.repeat(32), PAYMENT_NOTIFICATION_SECRET: 'y'.repeat(32) };
      expect(loadConfig(base).appLinkBase).to.equal('effectsapp://');
      expect(loadConfig({ ...base, APP_LINK_BASE: 'https://go.example.app/app' }).appLinkBase).to.equal('https://go.example.app/app');
      for (const bad of ['javascript:alert(1)', 'data:text/html,x', 'no-scheme', 'effectsapp://"onclick']) {
        expect(() => loadConfig({ ...base, APP_LINK_BASE: bad }), bad).to.throw(/APP_LINK_BASE/);
      }
    });
  });

  it('the html template escapes every value and keeps nested html', () => {
    const name = '<img src=x onerror=alert(1)>"\'&';
    expect(html`<p title="${name}">${name}${html`<b>${'&'}</b>`}</p>`.text)
      .to.equal('<p title="&#60;img src=x onerror=alert(1)&#62;&#34;&#39;&#38;">&#60;img src=x onerror=alert(1)&#62;&#34;&#39;&#38;<b>&#38;</b></p>');
  });

  describe('headers of every HTML page the service serves', () => {
    let bed: Testbed;
    let referrals: TestApp;
    before(async () => {
      bed = await startTestbed({ config: { APP_LINK_BASE: 'https://go.example.app/app' } });
      bed.app.services.config = { ...bed.app.services.config, publicBaseUrl: bed.app.url };
      referrals = await startTestApp({ config: { APP_LINK_BASE: 'https://go.example.app/app' } });
    });
    after(async () => {
      await bed.close();
      await referrals.close();
    });

    function expectStrictPage(response: Response, body: string): void {
      expect(response.headers.get('content-type')).to.match(/^text\/html/);
      const policy = response.headers.get('content-security-policy') ?? '';
      expect(policy).to.contain("default-src 'none'").and.contain("frame-ancestors 'none'").and.contain("base-uri 'none'");
      expect(policy).not.to.match(/script-src|unsafe-inline|unsafe-eval/);
      expect(response.headers.get('x-frame-options')).to.equal('DENY');
      expect(response.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(response.headers.get('referrer-policy')).to.equal('no-referrer');
      expect(body).not.to.match(/<script|\sstyle=|\son[a-z]+=/i);
      // The one inline stylesheet is the one the policy names by hash.
      const styles = [...body.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => match[1]);
      expect(styles).to.have.length(1);
      expect(policy).to.contain(`'sha256-${createHash('sha256').update(styles[0]).digest('base64')}'`);
    }

    async function fetchPage(url: string, init?: RequestInit): Promise<{ response: Response; body: string }> {
      const response = await fetch(url, { redirect: 'manual', ...init });
      return { response, body: await response.text() };
    }

    it('referral pages (found and not found), with the app link on APP_LINK_BASE', async () => {
      const user = await makeUser();
      const { referral_code: code } = await referrals.services.db('users').where({ id: user.id }).first('referral_code');
      const found = await fetchPage(`${referrals.url}/r/${code}`);
      expectStrictPage(found.response, found.body);
      expect(found.body).to.contain(`href="https://go.example.app/app/r/${code}"`);
      const missing = await fetchPage(`${referrals.url}/r/nobody`);
      expect(missing.response.status).to.equal(404);
      expectStrictPage(missing.response, missing.body);
    });

    it('payment return and fail pages, whose app link names the payment', async () => {
      const products = await freshShowcase();
      const payment = await createPayment(bed, await makeUser(), products.pack_100.id);
      for (const outcome of ['return', 'fail']) {
        const page = await fetchPage(`${bed.app.url}/v1/payments/${payment.id}/${outcome}`);
        expectStrictPage(page.response, page.body);
        expect(page.body).to.contain(`href="https://go.example.app/app/payments/${payment.id}/${outcome}"`);
      }
      const odd = await fetchPage(`${bed.app.url}/v1/payments/${encodeURIComponent('"><b>')}/return`);
      expectStrictPage(odd.response, odd.body);
      expect(odd.body).not.to.contain('<b>');
    });

    it('the processor simulator\'s pages: payment (its form may reach the return URL), notices, receipt, not found', async () => {
      const products = await freshShowcase();
      const payment = await createPayment(bed, await makeUser(), products.pack_100.id);
      const payPage = await fetchPage(payment.payment_url);
      expectStrictPage(payPage.response, payPage.body);
      expect(payPage.response.headers.get('content-security-policy')).to.contain(`form-action 'self' ${bed.app.url};`);

      const paid = await fetchPage(payment.payment_url, { method: 'POST', body: new URLSearchParams({ outcome: 'success' }) });
      expect(paid.response.status).to.equal(303);
      const notice = await fetchPage(payment.payment_url);
      expectStrictPage(notice.response, notice.body);
      expect(notice.body).to.contain('Заказ уже оплачен');

      const orderId = new URL(payment.payment_url).pathname.split('/').pop();
      const receipt = await fetchPage(`${bed.app.url}/sim/processor/receipts/${orderId}`);
      expectStrictPage(receipt.response, receipt.body);
      expect(receipt.body).to.contain('Кассовый чек');
      const missing = await fetchPage(`${bed.app.url}/sim/processor/pay/nope`);
      expect(missing.response.status).to.equal(404);
      expectStrictPage(missing.response, missing.body);
    });

    it('an HTML answer that set no policy still gets the strict headers from the app chain', async () => {
      const bare: Route = {
        method: 'GET', path: '/bare.html', summary: 'an HTML answer without a policy of its own', access: 'public',
        handler: async (ctx) => {
          ctx.type = 'html';
          ctx.body = '<!doctype html><p>bare</p>';
        },
      };
      const app = await startTestApp({ extraRoutes: [bare] });
      try {
        const response = await fetch(`${app.url}/bare.html`);
        expect(response.headers.get('content-security-policy')).to.contain("default-src 'none'").and.contain("form-action 'none'");
        expect(response.headers.get('x-frame-options')).to.equal('DENY');
        const json = await fetch(`${app.url}/healthz`);
        expect(json.headers.get('content-security-policy')).to.equal(null);
      } finally {
        await app.close();
      }
    });
  });
});
