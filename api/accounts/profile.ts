import type { Knex } from 'knex';
import { invalidField } from '../http/errors';

/** Profile changes (`PATCH /v1/me`). */

/** `en-US`, `en_GB` and `EN` become `en`; null for a language the service does not speak. */
function normalizeLocale(value: string): 'ru' | 'en' | null {
  const language = value.trim().split(/[-_]/)[0].toLowerCase();
  return language === 'ru' || language === 'en' ? language : null;
}

export async function updateProfile(db: Knex, userId: string, changes: { name?: string | null; locale?: string }): Promise<void> {
  const update: Record<string, string | null> = {};
  if (changes.name !== undefined) update.name = changes.name?.trim() || null;
  if (changes.locale !== undefined) {
    const locale = normalizeLocale(changes.locale);
    if (!locale) throw invalidField(['body', 'locale'], 'must be ru or en (a region suffix is allowed)', 'enum');
    update.locale = locale;
  }
  if (Object.keys(update).length) await db('users').where({ id: userId }).update(update);
}
