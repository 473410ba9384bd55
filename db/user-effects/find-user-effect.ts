import type { Knex } from 'knex';
import type { UserEffectRow } from './model';

/** A user effect by id, whoever owns it (the workers' view of a moderation round); null when absent. */
export async function findUserEffect(db: Knex, userEffectId: string): Promise<UserEffectRow | null> {
  const row: UserEffectRow | undefined = await db('user_effects').where({ id: userEffectId }).first();
  return row ?? null;
}
