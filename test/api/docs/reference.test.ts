import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { laptop, layoutFacts, phone, screenshot, useBrowser, visit, type Visit } from '../../browser';
import { useTestApp } from '../../harness';

/**
 * `/docs`, the API reference, in real Chromium with every request off this machine refused: it
 * renders `/v1/openapi.json` from the bundle the service serves, lists every section and operation,
 * and logs no error and no policy violation. Screenshot: `docs/screenshots/api-reference.png`
 * (UPDATE_SCREENSHOTS=1).
 */
describe('/docs, the API reference (Chromium, offline)', function () {
  this.timeout(60_000);
  const chromium = useBrowser();
  const t = useTestApp();
  let opened: Visit;

  before(async () => {
    opened = await visit(chromium.browser, `${t.app.url}/docs`, { viewport: laptop, locale: 'en-US' });
    await opened.page.waitForSelector('[data-section-id$="/operation/postGenerations"]', { state: 'attached', timeout: 30_000 });
    await screenshot(opened.page, 'api-reference');
  });
  after(() => opened?.close());

  it('answers HTML with its own strict policy: scripts and data from this origin only, no inline code, no remote origin', () => {
    const headers = opened.response.headers();
    expect(opened.response.status()).to.equal(200);
    expect(headers['content-type']).to.match(/^text\/html/);
    const policy = headers['content-security-policy'];
    expect(policy).to.contain("default-src 'none'").and.contain("script-src 'self'").and.contain("connect-src 'self'").and.contain("frame-ancestors 'none'");
    expect(policy).not.to.match(/unsafe-inline|unsafe-eval|https?:/);
    expect(headers['x-frame-options']).to.equal('DENY');
    expect(headers['x-content-type-options']).to.equal('nosniff');
    expect(headers['referrer-policy']).to.equal('no-referrer');
  });

  it('serves Redoc from the service itself', async () => {
    const bundle = await fetch(`${t.app.url}/docs/redoc.standalone.js`);
    expect(bundle.status).to.equal(200);
    expect(bundle.headers.get('content-type')).to.match(/javascript/);
    expect((await bundle.text()).length).to.be.above(100_000);
  });

  it('lists every section and every operation of the document', async () => {
    const document = await (await fetch(`${t.app.url}/v1/openapi.json`)).json() as { tags: { name: string }[]; paths: Record<string, Record<string, { summary: string }>> };
    const text = await opened.page.evaluate('document.body.innerText') as string;
    expect(text).to.contain('Effects API');
    for (const tag of document.tags) expect(text, tag.name).to.contain(tag.name);
    const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
    const rendered = await opened.page.evaluate('document.querySelectorAll("[data-section-id^=\\"tag/\\"][data-section-id*=\\"/operation/\\"]").length') as number;
    expect(rendered).to.equal(operations.length);
    expect(text).to.contain('Idempotent retries');
  });

  it('finds operations with its search box (the search index runs in its worker)', async () => {
    await opened.page.fill('input[placeholder="Search..."]', 'refresh');
    const result = opened.page.locator('[data-role="search:results"] li', { hasText: 'The payment with its status refreshed' });
    await result.first().waitFor({ timeout: 10_000 });
    await opened.page.fill('input[placeholder="Search..."]', '');
  });

  it('logs no error, no policy violation, and asks nothing of any other host', async () => {
    await opened.page.mouse.wheel(0, 5000);
    await opened.page.waitForTimeout(500);
    expect(opened.errors()).to.deep.equal([]);
    expect(await opened.violations()).to.deep.equal([]);
    expect(opened.foreignRequests()).to.deep.equal([]);
  });

  it('links the API changelog: CHANGELOG-API.md as a page of the service, under the layout\'s policy (no script), readable on a phone', async () => {
    const link = opened.page.locator('a[href="/docs/changelog"]', { hasText: 'API changelog' });
    expect(await link.count()).to.equal(1);
    const markdown = readFileSync(path.join(__dirname, '..', '..', '..', '..', 'CHANGELOG-API.md'), 'utf8');
    for (const viewport of [laptop, phone]) {
      const changelog = await visit(chromium.browser, `${t.app.url}/docs/changelog`, { viewport, locale: 'en-US' });
      try {
        const headers = changelog.response.headers();
        expect(changelog.response.status()).to.equal(200);
        expect(headers['content-type']).to.match(/^text\/html/);
        expect(headers['content-security-policy']).to.contain("default-src 'none'").and.contain("frame-ancestors 'none'").and.not.contain('script-src');
        expect(await changelog.page.innerText('h1')).to.equal('API change list (/v1)');
        expect(await changelog.page.locator('h2').allInnerTexts()).to.deep.equal(['Breaking', 'Additive']);
        // Every item of the file, with its code spans and dates as elements, not as Markdown.
        expect(await changelog.page.locator('main li').count()).to.equal(markdown.split('\n').filter((line) => line.startsWith('- ')).length);
        expect(await changelog.page.locator('main li strong').first().innerText()).to.match(/^\d{4}-\d{2}-\d{2}$/);
        expect(await changelog.page.locator('main code').count()).to.be.above(50);
        expect(await changelog.page.innerText('main')).not.to.contain('`');
        const facts = await layoutFacts(changelog.page);
        expect(facts.scrollWidth, `${viewport.width} px wide`).to.be.at.most(facts.innerWidth);
        if (viewport === phone) await screenshot(changelog.page, 'api-changelog');
        expect(changelog.errors()).to.deep.equal([]);
        expect(await changelog.violations()).to.deep.equal([]);
        expect(changelog.foreignRequests()).to.deep.equal([]);
      } finally {
        await changelog.close();
      }
    }
  });
});
