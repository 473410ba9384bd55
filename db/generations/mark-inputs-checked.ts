import type { Knex } from 'knex';

/** pending (photos unchecked) -> pending (photos fine): the dispatcher will not read them again. Guarded by the status. */
export async function markInputsChecked(db: Knex, generationId: string): Promise<boolean> {
  const checked = await db.raw<{ rowCount: number }>(
    "update generations set inputs_checked_at = now(), checking_until = null where id = :generationId and status = 'pending'",
    { generationId },
  );
  return checked.rowCount === 1;
}
