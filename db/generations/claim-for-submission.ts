import type { Knex } from 'knex';
import type { GenerationRow } from './model';

export type ClaimedGeneration = Pick<GenerationRow, 'id' | 'user_id' | 'model' | 'inputs' | 'prompt' | 'submit_job_id' | 'output_type' | 'inputs_checked_at'>;

/**
 * A dispatcher (of process `processId`) takes pending generations for submission until `claimS`
 * from now. Guarded: only `pending` ones without a live claim, so a duplicate ticket or a second
 * dispatcher changes nothing, and none whose last submission is still unresolved (recovery looks
 * that one up at the provider). The status stays `pending` (the contract's `processing` starts when
 * the provider accepted); a claim past its time, or of a dead process, is taken back by the sweeps.
 */
export async function claimForSubmission(trx: Knex.Transaction, generationIds: string[], claimS: number, processId: string): Promise<ClaimedGeneration[]> {
  if (!generationIds.length) return [];
  const { rows } = await trx.raw<{ rows: ClaimedGeneration[] }>(
    `update generations
     set dispatch_until = now() + :claimS * interval '1 second', dispatch_attempts = dispatch_attempts + 1, claimed_by = :processId
     where id = any(:ids::uuid[]) and status = 'pending' and (dispatch_until is null or dispatch_until < now())
       and submission_account_id is null
     returning id, user_id, model, inputs, prompt, submit_job_id, output_type, inputs_checked_at`,
    { ids: generationIds, claimS, processId },
  );
  return rows;
}
