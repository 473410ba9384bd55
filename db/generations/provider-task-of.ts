import type { Knex } from 'knex';

/** The provider task the generation runs as, or null (not submitted, or no such generation). */
export async function providerTaskOf(db: Knex, generationId: string): Promise<string | null> {
  const { rows } = await db.raw<{ rows: { provider_task_id: string | null }[] }>('select provider_task_id from generations where id = ?', [generationId]);
  return rows[0]?.provider_task_id ?? null;
}
