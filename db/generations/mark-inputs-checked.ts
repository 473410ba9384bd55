import type { Knex } from 'knex';
import type { StagedInput } from './model';

/** Photos staged with the provider: its links, and until when it keeps them. */
export interface StagedInputs {
  inputs: StagedInput[];
  until: Date;
}

/**
 * pending (photos unchecked) -> pending (photos fine, and staged with the provider when `staged`):
 * the dispatcher will not read them again. Guarded by the status.
 */
export async function markInputsChecked(db: Knex, generationId: string, staged: StagedInputs | null): Promise<boolean> {
  const checked = await db.raw<{ rowCount: number }>(
    `update generations set inputs_checked_at = now(), checking_until = null, staged_inputs = :inputs::jsonb, staged_inputs_until = :until
     where id = :generationId and status = 'pending'`,
    { generationId, inputs: staged && JSON.stringify(staged.inputs), until: staged?.until ?? null },
  );
  return checked.rowCount === 1;
}
