import { schema } from '../http/validation';

/** The catalog's languages (contract part B): `ru` by default, also `en`; anything else is `422`. */
export const locales = ['ru', 'en'] as const;
export type Locale = (typeof locales)[number];

export const localeProperty = { ...schema.string({ enum: [...locales] }), default: 'ru' };

/** A text in every catalog language, as the importer takes it. */
export type Localized = Record<Locale, string>;

/** The Postgres text search configuration whose stemmer knows the locale's word forms. */
export const searchConfigOf: Record<Locale, string> = { ru: 'russian', en: 'english' };
