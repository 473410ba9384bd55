import type { Knex } from 'knex';
import type { GenerationRow } from './model';

export type ClaimedGeneration = Pick<GenerationRow, 'id' | 'user_id' | 'model' | 'inputs' | 'prompt' | 'submit_job_id' | 'output_type' | 'inputs_checked_at'>;

/**
 * A dispatcher takes pending generations for submission until `claimS` from now. Guarded: only
 * `pending` ones without a live claim, so a duplicate ticket or a second dispatcher changes nothing.
 * The status stays `pending` (the contract's `processing` starts when the provider accepted); a
 * claim past its time belongs to a crashed worker and is taken back by `recoverStalledDispatches`.
 */
export async function claimForSubmission(trx: Knex.Transaction, generationIds: string[], claimS: number): Promise<ClaimedGeneration[]> {
  if (!generationIds.length) return [];
  const { rows } = await trx.raw<{ rows: ClaimedGeneration[] }>(
    `update generations
     set dispatch_until = now() + :claimS * interval '1 second', dispatch_attempts = dispatch_attempts + 1
     where id = any(:ids::uuid[]) and status = 'pending' and (dispatch_until is null or dispatch_until < now())
     returning id, user_id, model, inputs, prompt, submit_job_id, output_type, inputs_checked_at`,
    { ids: generationIds, claimS },
  );
  return rows;
}
