import type { Knex } from 'knex';
import type { Lease } from '../../pool/lease-slots';

/**
 * pending (claimed) -> pending (submitting on the leased account): written before the provider is
 * called, in the transaction of the claim and the lease. Until the answer is recorded, a task may
 * exist at the provider under the generation's id: whoever finds the submission unresolved (a
 * crashed worker's, an answer that never came) looks it up there instead of submitting again.
 */
export async function recordSubmissionAttempts(trx: Knex.Transaction, leases: Lease[]): Promise<void> {
  if (!leases.length) return;
  await trx.raw(
    `update generations g set submission_account_id = l.account_id
     from unnest(:ids::uuid[], :accounts::integer[]) as l (generation_id, account_id)
     where g.id = l.generation_id and g.status = 'pending'`,
    { ids: leases.map((lease) => lease.generationId), accounts: leases.map((lease) => lease.accountId) },
  );
}
