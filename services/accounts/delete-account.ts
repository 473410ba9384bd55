import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { deleteAccountRows } from '../../db/accounts/delete-account-rows';
import { userPrefixes } from '../../media/object-keys';
import type { Storage } from '../../media/storage';

/**
 * Deletes an account (`DELETE /v1/me`, and guest expiry with `idleGuestForDays`: then only a guest
 * with no sign-in for that long goes, so one that signed in or registered meanwhile is kept). Files
 * go first (uploads, results, previews, avatar): if storage fails the account is still there and the
 * caller can try again. Answers whether the account was deleted.
 */
export async function deleteAccount(
  services: { db: Knex; boss: PgBoss; storage: Storage },
  userId: string,
  options: { idleGuestForDays?: number } = {},
): Promise<boolean> {
  const { db, boss, storage } = services;
  await Promise.all(userPrefixes(userId).map((prefix) => storage.removePrefix(prefix)));
  return deleteAccountRows(db, boss, userId, options);
}
