/**
 * The language of a browser page: `ru` or `en`. Each page takes the first of: what it knows of the
 * user (a profile locale), `?lang=`, the browser's `Accept-Language` (its most preferred of the two,
 * by q-value), then Russian, the product's default.
 */
import type { Language } from '../../common/language';

function languageOfQuery(lang: unknown): Language | null {
  const asked = typeof lang === 'string' ? lang.trim().toLowerCase() : '';
  return asked === 'ru' || asked === 'en' ? asked : null;
}

/** `Accept-Language: de-DE, en;q=0.8, ru;q=0.5` gives `en`; neither language listed gives null. */
export function languageOfAcceptLanguage(header: string | undefined): Language | null {
  let best: { language: Language; quality: number } | null = null;
  for (const entry of (header ?? '').split(',')) {
    const [range, ...parameters] = entry.trim().toLowerCase().split(';');
    const primary = range.split('-')[0].trim();
    if (primary !== 'ru' && primary !== 'en') continue;
    const q = parameters.map((parameter) => /^\s*q\s*=\s*([\d.]+)\s*$/.exec(parameter)?.[1]).find(Boolean);
    const quality = q === undefined ? 1 : Number(q);
    if (!(quality > 0)) continue;
    if (!best || quality > best.quality) best = { language: primary, quality };
  }
  return best?.language ?? null;
}

export function chooseLanguage(sources: { known?: Language | null; lang?: unknown; acceptLanguage?: string }): Language {
  return sources.known ?? languageOfQuery(sources.lang) ?? languageOfAcceptLanguage(sources.acceptLanguage) ?? 'ru';
}
