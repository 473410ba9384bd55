import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Response } from 'playwright-core';

/**
 * Real Chromium for the tests of the pages people see: Debian's `chromium` at /usr/bin/chromium
 * (`.ci/run` installs it), driven by playwright-core (which never downloads a browser). One browser
 * per test file (`useBrowser()`), one fresh context per page visit. The flags keep it off the
 * network: this machine refuses Chromium's background connections.
 */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const phone = { width: 390, height: 844 };

const chromiumArgs = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

/** Where screenshots go: `docs/screenshots/` with UPDATE_SCREENSHOTS=1 (then commit them), else a temporary folder. */
export const screenshotDir = process.env.UPDATE_SCREENSHOTS === '1'
  ? path.join(__dirname, '..', '..', 'docs', 'screenshots')
  : path.join(os.tmpdir(), 'effects-screenshots');

export function useBrowser(): { browser: Browser } {
  const handle = {} as { browser: Browser };
  before(async function () {
    this.timeout(60_000);
    handle.browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
  });
  after(() => handle.browser?.close());
  return handle;
}

export interface Visit {
  context: BrowserContext;
  page: Page;
  response: Response;
  /** Content-Security-Policy reports: `securitypolicyviolation` events and console messages. */
  violations(): Promise<string[]>;
  /** Console errors and uncaught exceptions of the page. */
  errors(): string[];
  /** Requests the page made to anywhere but this machine (each was refused). */
  foreignRequests(): string[];
  close(): Promise<void>;
}

// Runs before any page script (through the DevTools protocol, so the page's own policy does not
// block it) and keeps every violation event of the document.
const violationRecorder = `
  window.__cspViolations = [];
  document.addEventListener('securitypolicyviolation', (event) => {
    window.__cspViolations.push(event.violatedDirective + ' blocked ' + (event.blockedURI || 'inline'));
  });
`;

/** A laptop screen, for pages that are not phone pages (the API reference). */
export const laptop = { width: 1280, height: 800 };

export async function visit(browser: Browser, url: string, options: { locale?: string; colorScheme?: 'light' | 'dark'; viewport?: typeof phone } = {}): Promise<Visit> {
  const onPhone = (options.viewport ?? phone) === phone;
  const context = await browser.newContext({
    viewport: options.viewport ?? phone,
    deviceScaleFactor: onPhone ? 2 : 1,
    isMobile: onPhone,
    hasTouch: onPhone,
    locale: options.locale ?? 'ru-RU',
    colorScheme: options.colorScheme ?? 'light',
  });
  await context.addInitScript({ content: violationRecorder });
  // Nothing leaves this machine: a request elsewhere is refused and remembered.
  const foreign: string[] = [];
  await context.route((target) => !['127.0.0.1', 'localhost'].includes(target.hostname) && target.protocol.startsWith('http'), (route) => {
    foreign.push(route.request().url());
    return route.abort();
  });
  const page = await context.newPage();
  const consoleReports: string[] = [];
  const errors: string[] = [];
  page.on('console', (message) => {
    if (/Content[- ]Security[- ]Policy/i.test(message.text())) consoleReports.push(message.text());
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  const response = await page.goto(url);
  if (!response) throw new Error(`no response for ${url}`);
  return {
    context,
    page,
    response,
    violations: async () => [...((await page.evaluate('window.__cspViolations')) as string[] ?? []), ...consoleReports],
    errors: () => [...errors],
    foreignRequests: () => [...foreign],
    close: () => context.close(),
  };
}

/** What the layout must give a phone: no horizontal scroll, a sans-serif system font. */
export async function layoutFacts(page: Page): Promise<{ scrollWidth: number; innerWidth: number; fontFamily: string }> {
  return page.evaluate(`({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    fontFamily: getComputedStyle(document.body).fontFamily,
  })`);
}

export async function screenshot(page: Page, name: string): Promise<Buffer> {
  mkdirSync(screenshotDir, { recursive: true });
  return page.screenshot({ path: path.join(screenshotDir, `${name}.png`), fullPage: false });
}
