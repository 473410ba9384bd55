import type { Knex } from 'knex';

/** Up to `limit` guests with no sign-in for `days`: due for deletion. */
export async function findIdleGuests(db: Knex, days: number, limit: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    "select id from users where is_anonymous and last_sign_in_at < now() - :days * interval '1 day' limit :limit",
    { days, limit },
  );
  return rows.map((row) => row.id);
}
