import { createHash } from 'node:crypto';
import { Html, html } from './html';
import type { Language } from '../../common/language';

/**
 * The one layout of every browser page the service serves (the referral invitation, the payer's
 * return and fail pages, the processor simulator's pages, and in a wide variant the operator
 * console): phone-first (a single card, readable
 * at 390 px wide, nothing wider than the screen), system fonts, light and dark by the device
 * setting, no script at all. The stylesheet is inline and allowed by its hash in the
 * Content-Security-Policy (`headers.ts`), so no inline style attribute is ever used.
 */

const stylesheet = `
:root{color-scheme:light dark;--bg:#f3f3f7;--card:#fff;--text:#17171f;--muted:#5b5b6b;--line:#e2e2ea;--accent:#5a3ff0;--on-accent:#fff;--ok:#138a3e;--bad:#c62828;--wait:#b26a00}
@media (prefers-color-scheme:dark){:root{--bg:#0e0e13;--card:#1a1a22;--text:#f1f1f6;--muted:#a4a4b4;--line:#30303c;--accent:#8f7dff;--on-accent:#0e0e13;--ok:#4ccb7a;--bad:#ff6b6b;--wait:#ffb74d}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;min-height:100vh;min-height:100dvh;display:flex;align-items:center;justify-content:center;padding:24px 16px;background:var(--bg);color:var(--text);font:17px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Helvetica Neue",Arial,sans-serif}
main{width:100%;max-width:420px;background:var(--card);border:1px solid var(--line);border-radius:20px;padding:32px 24px 24px;text-align:center;overflow-wrap:anywhere}
.icon{display:block;width:64px;height:64px;margin:0 auto 16px;color:var(--accent)}
.ok .icon{color:var(--ok)}
.bad .icon{color:var(--bad)}
.wait .icon{color:var(--wait)}
h1{font-size:24px;line-height:1.25;margin:0 0 12px}
p{margin:0 0 16px;color:var(--muted)}
p.hint{font-size:14px;margin:16px 0 0}
strong{color:var(--text)}
.code{display:block;margin:0 0 20px;padding:12px;border:1px dashed var(--line);border-radius:12px;color:var(--text);font:600 22px/1.2 ui-monospace,"SF Mono",Menlo,Consolas,monospace;letter-spacing:.12em}
.label{display:block;font-size:13px;text-transform:uppercase;letter-spacing:.08em;color:var(--muted);margin:0 0 6px}
.button{display:block;width:100%;min-height:48px;margin:8px 0 0;padding:12px 20px;border:0;border-radius:14px;background:var(--accent);color:var(--on-accent);font-family:inherit;font-size:17px;font-weight:600;line-height:24px;text-align:center;text-decoration:none;cursor:pointer}
.button.secondary{background:transparent;color:var(--accent);border:1px solid var(--line)}
.button:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
form{margin:0}
table{width:100%;border-collapse:collapse;margin:0 0 16px;font-size:15px;text-align:left}
th,td{padding:8px 4px;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:500}
td.number,th.number{text-align:right;white-space:nowrap}
.notice{color:var(--bad)}
body.console{display:block;padding:0;font-size:15px}
.console>nav{display:flex;flex-wrap:wrap;align-items:center;gap:4px 18px;padding:12px 16px;background:var(--card);border-bottom:1px solid var(--line)}
.console>nav a{color:var(--accent);font-weight:600;text-decoration:none;padding:6px 0}
.console>nav a[aria-current=page]{color:var(--text);border-bottom:2px solid var(--accent)}
.console>nav .brand{color:var(--text);font-weight:700;margin-right:8px}
.console main{max-width:1240px;margin:16px auto;padding:20px 16px;border-radius:12px;text-align:left;overflow-wrap:normal}
.console h1{font-size:22px}
.console h2{font-size:18px;margin:28px 0 8px}
.console p{font-size:15px;margin:0 0 12px}
.console table{font-size:14px}
.console td,.console th{padding:6px 8px}
.console .button{display:inline-block;width:auto;min-height:36px;margin:0;padding:6px 14px;font-size:14px;line-height:22px;white-space:nowrap}
.console th{white-space:nowrap}
.scroll{overflow-x:auto;margin:0 0 16px}
.scroll table{margin:0}
.mono{font-family:ui-monospace,"SF Mono",Menlo,Consolas,monospace;font-size:13px}
.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:12px;margin:0 0 16px}
.figure{display:block;border:1px solid var(--line);border-radius:12px;padding:12px;color:var(--muted);text-decoration:none}
.figure strong{display:block;font-size:28px;line-height:1.2}
.figure.bad strong{color:var(--bad)}
.tag{display:inline-block;padding:1px 8px;border-radius:10px;border:1px solid var(--line);font-size:13px;white-space:nowrap}
.tag.ok{color:var(--ok)}
.tag.bad{color:var(--bad)}
.tag.wait{color:var(--wait)}
.chart{display:block;width:100%;height:180px;margin:0 0 8px}
.chart .created{fill:var(--accent)}
.chart .succeeded{fill:var(--ok)}
.chart .failed{fill:var(--bad)}
.chart .axis{stroke:var(--line)}
.chart text{fill:var(--muted);font-size:10px}
.legend span{margin-right:16px}
.legend .created{color:var(--accent)}
.legend .succeeded{color:var(--ok)}
.legend .failed{color:var(--bad)}
.inline{display:inline}
.id{display:block;white-space:nowrap;color:var(--muted);font-size:12px}
.nowrap{white-space:nowrap}
.time{display:block;white-space:nowrap;color:var(--muted);font-size:12px}
.button.danger{background:var(--bad)}
.console input[type=text]{min-width:0;min-height:36px;padding:6px 8px;border:1px solid var(--line);border-radius:8px;background:var(--bg);color:var(--text);font:inherit;font-size:14px}
.console input:focus-visible{outline:2px solid var(--accent);outline-offset:1px}
.archive{display:flex;gap:6px;align-items:center}
.archive input{width:13em}
.archive-by-id{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:flex-end;margin:0 0 12px}
.archive-by-id label{display:flex;flex-direction:column;gap:4px;color:var(--muted);font-size:13px}
.archive-by-id input{width:22em;max-width:100%}
.flash{padding:10px 12px;border:1px solid var(--line);border-left-width:4px;border-radius:8px;color:var(--text)}
.flash.ok{border-left-color:var(--ok)}
.flash.wait{border-left-color:var(--wait)}
.flash.bad{border-left-color:var(--bad)}
td.slow,td.slow .time{color:var(--bad)}
`.trim();

// A constant of this file, inserted as it is: the hash covers its exact text (quotes included).
const stylesheetHtml = new Html(stylesheet);

/** The CSP source that allows exactly this stylesheet. */
export const pageStyleHash = `'sha256-${createHash('sha256').update(stylesheet).digest('base64')}'`;

const iconPaths = {
  gift: html`<path d="M20 12v9H4v-9"/><path d="M2 7h20v5H2z"/><path d="M12 21V7"/><path d="M12 7H7.5a2.5 2.5 0 1 1 0-5C11 2 12 7 12 7zm0 0h4.5a2.5 2.5 0 1 0 0-5C13 2 12 7 12 7z"/>`,
  success: html`<circle cx="12" cy="12" r="10"/><path d="m7.5 12.5 3 3 6-7"/>`,
  failure: html`<circle cx="12" cy="12" r="10"/><path d="m15 9-6 6M9 9l6 6"/>`,
  unknown: html`<circle cx="12" cy="12" r="10"/><path d="M9.1 9a3 3 0 0 1 5.8 1c0 2-3 2.5-3 4"/><path d="M12 17.5h.01"/>`,
  card: html`<rect x="2" y="5" width="20" height="14" rx="2"/><path d="M2 10h20M6 15h4"/>`,
  receipt: html`<path d="M5 2h14v20l-3.5-2-3.5 2-3.5-2L5 22z"/><path d="M9 7h6M9 11h6M9 15h4"/>`,
} as const;

export type PageIcon = keyof typeof iconPaths;

/** `ok`, `bad`, `wait` colour the icon; `neutral` keeps the accent colour. */
export type PageTone = 'neutral' | 'ok' | 'bad' | 'wait';

export interface PageContent {
  language: Language;
  title: string;
  icon: PageIcon;
  tone?: PageTone;
  body: Html;
}

function documentOf(language: Language, title: string, bodyClass: string | null, body: Html): string {
  return html`<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${title}</title>
<style>${stylesheetHtml}</style>
</head>
<body${bodyClass ? html` class="${bodyClass}"` : ''}>
${body}
</body>
</html>
`.text;
}

export function renderPage(content: PageContent): string {
  return documentOf(content.language, content.title, null, html`<main class="${content.tone ?? 'neutral'}">
<svg class="icon" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">${iconPaths[content.icon]}</svg>
<h1>${content.title}</h1>
${content.body}
</main>`);
}

/**
 * The operator console's variant of the layout: a navigation bar and one wide card whose tables
 * scroll sideways on a phone instead of widening the page. English only (operators).
 */
export function renderConsolePage(content: { title: string; nav: Html; body: Html }): string {
  return documentOf('en', content.title, 'console', html`${content.nav}
<main>
<h1>${content.title}</h1>
${content.body}
</main>`);
}
