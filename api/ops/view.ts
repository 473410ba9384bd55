import type { Config } from '../../config';
import { html, type Html } from '../../media/pages/html';
import { renderConsolePage } from '../../media/pages/layout';
import { formToken } from './form-guard';

/** The console's pages, in the order of its navigation bar. */
const consolePages = [
  { path: '/ops', label: 'Overview' },
  { path: '/ops/pool', label: 'Provider pool' },
  { path: '/ops/activity', label: 'Queues and generations' },
  { path: '/ops/failed', label: 'Failed generations' },
  { path: '/ops/payments', label: 'Payments' },
  { path: '/ops/marketplace', label: 'Marketplace' },
  { path: '/ops/queues', label: 'pg-boss dashboard' },
] as const;

export type ConsolePath = (typeof consolePages)[number]['path'];

export function consolePage(current: ConsolePath, title: string, body: Html): string {
  const nav = html`<nav aria-label="Operator console"><span class="brand">Operator console</span>${consolePages.map((page) => page.path === current
    ? html`<a href="${page.path}" aria-current="page">${page.label}</a>`
    : html`<a href="${page.path}">${page.label}</a>`)}</nav>`;
  return renderConsolePage({ title, nav, body });
}

/** `2026-11-23 14:05 UTC`: operators compare times across machines and logs. */
export function utcTime(value: Date | null): string {
  if (!value) return '—';
  return `${value.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** `40 s`, `3 min`, `2 h 5 min`: a span of time, to the second under a minute. */
export function duration(spanS: number): string {
  const span = Math.round(Math.abs(spanS));
  return span < 60 ? `${span} s` : span < 3600 ? `${Math.floor(span / 60)} min` : `${Math.floor(span / 3600)} h ${Math.floor((span % 3600) / 60)} min`;
}

/** `3 min ago`, `2 h 5 min ago`, `in 40 s`: how far a time is from now. */
export function relativeTime(value: Date | null, nowMs = Date.now()): string {
  if (!value) return '—';
  const seconds = Math.round((nowMs - value.getTime()) / 1000);
  return seconds >= 0 ? `${duration(seconds)} ago` : `in ${duration(seconds)}`;
}

export function seconds(value: number | null): string {
  return value === null ? '—' : `${value.toFixed(value < 10 ? 1 : 0)} s`;
}

/** A hidden field with the console's form token (`form-guard.ts`). */
export function formTokenField(config: Config): Html {
  return html`<input type="hidden" name="csrf" value="${formToken(config)}">`;
}

/** A table that scrolls sideways on a narrow screen; an empty one says so instead. */
export function table(head: Html, rows: Html[], empty: string): Html {
  if (!rows.length) return html`<p class="hint">${empty}</p>`;
  return html`<div class="scroll"><table><thead>${head}</thead><tbody>${rows}</tbody></table></div>`;
}
