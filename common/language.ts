/** The product's two languages; Russian is the default. */
export type Language = 'ru' | 'en';

/** A profile locale (or any locale tag) starting with `en` is English, anything else Russian (contract: payment pages). */
export function languageOf(locale: string | null | undefined): Language {
  return (locale ?? '').trim().toLowerCase().startsWith('en') ? 'en' : 'ru';
}
