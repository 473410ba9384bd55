export type PageLanguage = 'ru' | 'en';

/** Contract rule: a profile locale starting with `en` gives an English payment page, anything else Russian. */
export function pageLanguage(locale: string): PageLanguage {
  return locale.trim().toLowerCase().startsWith('en') ? 'en' : 'ru';
}
