import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { submissionClaimOver } from './find-stalled-dispatches';

/**
 * pending (claim over) -> pending (waiting): the claim of a worker that died, stalled, or left its
 * submission unresolved is taken back, when no task exists for it at the provider (none was sent,
 * or the lookup found none). Guarded by the same condition as `findStalledDispatches`, so of several
 * sweeps only one takes it, and a live claim made since is left alone. Answers whether it did, with
 * the generation's ticket and the kind of its line.
 */
export async function takeBackStalledDispatch(trx: Knex.Transaction, generationId: string): Promise<{ submitJobId: string | null; kind: ProviderKind } | null> {
  const { rows } = await trx.raw<{ rows: { submit_job_id: string | null; provider_kind: ProviderKind }[] }>(
    `update generations set dispatch_until = null, claimed_by = null, submission_account_id = null
     where id = :generationId and status = 'pending' and dispatch_until is not null and ${submissionClaimOver}
     returning submit_job_id, provider_kind`,
    { generationId },
  );
  return rows[0] ? { submitJobId: rows[0].submit_job_id, kind: rows[0].provider_kind } : null;
}
