import type { Knex } from 'knex';

/** The product's two languages; Russian is the default. */
export type Language = 'ru' | 'en';

/** A profile locale (or any locale tag) starting with `en` is English, anything else Russian (contract: payment pages). */
export function languageOf(locale: string | null | undefined): Language {
  return (locale ?? '').trim().toLowerCase().startsWith('en') ? 'en' : 'ru';
}

/** The profile locale of a user (`ru` or `en`), or null when there is no such user. */
export async function userLocale(db: Knex, userId: string): Promise<string | null> {
  const { rows } = await db.raw<{ rows: { locale: string }[] }>('select locale from users where id = ?', [userId]);
  return rows[0]?.locale ?? null;
}
