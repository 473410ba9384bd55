import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { enqueue } from '../queues';

/**
 * The rows of an account go in one transaction (identities, refresh tokens, credits and the rest by
 * cascade), with the background revocation of its idp_b grants; the device keeps its start-credit
 * mark (the `devices` row is not the user's). With `idleGuestForDays` only a guest idle that long
 * goes. Answers whether the account was deleted.
 */
export async function deleteAccountRows(db: Knex, boss: PgBoss, userId: string, options: { idleGuestForDays?: number } = {}): Promise<boolean> {
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
