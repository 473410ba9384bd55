import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { userPrefixes } from '../../media/object-keys';
import type { Storage } from '../../media/storage';
import { enqueue } from '../queues';

/** Erases every file of the user from object storage (uploads, results, previews, avatar). */
async function eraseUserFiles(storage: Storage, userId: string): Promise<void> {
  await Promise.all(userPrefixes(userId).map((prefix) => storage.removePrefix(prefix)));
}

/**
 * Deletes an account (`DELETE /v1/me`, and guest expiry with `idleGuestForDays`: then only a guest
 * with no sign-in for that long goes, so one that signed in or registered meanwhile is kept). Files
 * go first: if storage fails the account is still there and the caller can try again. The rows go
 * in one transaction (identities, refresh tokens, credits and the rest by cascade), with the
 * background revocation of idp_b grants; the device keeps its start-credit mark (the `devices` row
 * is not the user's). Answers whether the account was deleted.
 */
export async function deleteAccount(
  services: { db: Knex; boss: PgBoss; storage: Storage },
  userId: string,
  options: { idleGuestForDays?: number } = {},
): Promise<boolean> {
  const { db, boss, storage } = services;
  await eraseUserFiles(storage, userId);
  return db.transaction(async (trx) => {
    const { rows: grants } = await trx.raw<{ rows: { sealed_refresh_token: string }[] }>(
      "select sealed_refresh_token from identities where user_id = ? and provider = 'idp_b' and sealed_refresh_token is not null",
      [userId],
    );
    const deleted = await trx.raw<{ rowCount: number }>(
      `delete from users where id = :userId
         and (:days::integer is null or (is_anonymous and last_sign_in_at < now() - :days::integer * interval '1 day'))`,
      { userId, days: options.idleGuestForDays ?? null },
    );
    if (deleted.rowCount === 0) return false;
    for (const grant of grants) await enqueue(boss, trx, 'revoke-idp-b', { sealedRefreshToken: grant.sealed_refresh_token });
    return true;
  });
}
