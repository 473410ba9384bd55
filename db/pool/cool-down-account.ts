import type { Knex } from 'knex';

/**
 * The provider answered 429 for this account: the pool skips it for `seconds` (its Retry-After).
 * A cooldown is only ever extended, never shortened by a later, shorter answer.
 */
export async function coolDownAccount(db: Knex, accountId: number, seconds: number): Promise<void> {
  await db.raw(
    `update provider_accounts
     set cooldown_until = greatest(coalesce(cooldown_until, now()), now() + :seconds * interval '1 second')
     where id = :accountId`,
    { accountId, seconds },
  );
}
