import type { Knex } from 'knex';
import { enqueueInTransaction, queues } from '../../db/boss';
import type { Storage } from '../../media/storage';
import { invalidField } from '../http/errors';
import type { Services } from '../services';
import { userPrefixes } from '../../media/object-keys';

/** Profile changes and account deletion. */

/** `en-US`, `en_GB` and `EN` become `en`; null for a language the service does not speak. */
export function normalizeLocale(value: string): 'ru' | 'en' | null {
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

/** Erases every file of the user from object storage (uploads, results, previews, avatar). */
export async function eraseUserFiles(storage: Storage, userId: string): Promise<void> {
  await Promise.all(userPrefixes(userId).map((prefix) => storage.removePrefix(prefix)));
}

/**
 * `DELETE /v1/me`. Files go first: if storage fails the account is still there and the client can
 * retry. The rows go in one transaction (identities, refresh tokens, credits and the rest by
 * cascade), with the background revocation of idp_b grants; the device keeps its start-credit mark.
 */
export async function deleteAccount(services: Services, userId: string): Promise<void> {
  const { db, boss, storage } = services;
  await eraseUserFiles(storage, userId);
  await db.transaction(async (trx) => {
    const grants = await trx('identities').where({ user_id: userId, provider: 'idp_b' }).whereNotNull('sealed_refresh_token').select('sealed_refresh_token');
    for (const grant of grants) {
      await enqueueInTransaction(boss, trx, queues.revokeIdpB, { sealedRefreshToken: grant.sealed_refresh_token }, { retryLimit: 8, retryDelay: 30, retryBackoff: true });
    }
    await trx('users').where({ id: userId }).delete();
  });
}
