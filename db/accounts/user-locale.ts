import type { Knex } from 'knex';

/** The profile locale of a user (`ru` or `en`), or null when there is no such user. */
export async function userLocale(db: Knex, userId: string): Promise<string | null> {
  const { rows } = await db.raw<{ rows: { locale: string }[] }>('select locale from users where id = ?', [userId]);
  return rows[0]?.locale ?? null;
}
