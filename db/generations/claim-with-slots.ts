import type { Knex } from 'knex';
import { lockedFreeSlots } from '../../pool/free-slot';
import type { KnownAccounts, Lease } from '../../pool/lease-slots';
import type { GenerationRow } from './model';

export type ClaimedGeneration = Pick<GenerationRow, 'id' | 'user_id' | 'model' | 'inputs' | 'prompt' | 'submit_job_id' | 'output_type' | 'inputs_checked_at'>;

export interface ClaimWithSlot {
  generation: ClaimedGeneration;
  lease: Lease;
}

/**
 * pending (waiting) -> pending (submitting on a leased slot), for the dispatcher of process
 * `processId`, in ONE statement (the slot's hand-over waits on no extra round trip): free slots are
 * locked `for update skip locked` (two workers never lease the same one; a slot whose lease ran out
 * counts as free, `pool/free-slot.ts`), the k-th of `generationIds` (their FIFO order) is paired
 * with the k-th free slot, claimed until `claimS` from now with the slot's account recorded as its
 * submission attempt (written before the provider is called: whoever finds it unresolved looks the
 * task up instead of submitting again), and the slot leased to it for `leaseS`.
 *
 * Guarded like every claim: only `pending` generations without a live claim and without an
 * unresolved submission; one that fails the guard, or finds no slot, is not in the answer and its
 * slot stays free. The status stays `pending` (the contract's `processing` starts when the provider
 * accepted); a claim past its time, or of a dead process, is taken back by the sweeps.
 */
export async function claimWithSlots(
  trx: Knex.Transaction,
  generationIds: string[],
  settings: { claimS: number; leaseS: number; processId: string; knownAccounts: KnownAccounts },
): Promise<ClaimWithSlot[]> {
  if (!generationIds.length) return [];
  const { rows } = await trx.raw<{ rows: (ClaimedGeneration & { account_id: number; slot_no: number })[] }>(
    `with wanted as materialized (
       select generation_id, rank from unnest(:ids::uuid[]) with ordinality as w (generation_id, rank)
     ), free as materialized (${lockedFreeSlots}), claimed as (
       update generations g
       set dispatch_until = now() + :claimS * interval '1 second', dispatch_attempts = g.dispatch_attempts + 1,
         claimed_by = :processId, submission_account_id = f.account_id
       from wanted w join free f on f.rank = w.rank
       where g.id = w.generation_id and g.status = 'pending' and (g.dispatch_until is null or g.dispatch_until < now())
         and g.submission_account_id is null
       returning g.id, g.user_id, g.model, g.inputs, g.prompt, g.submit_job_id, g.output_type, g.inputs_checked_at, f.account_id, f.slot_no
     ), leased as (
       update provider_slots s
       set generation_id = c.id, user_effect_id = null, lease_expires_at = now() + :leaseS * interval '1 second'
       from claimed c
       where s.account_id = c.account_id and s.slot_no = c.slot_no
     )
     select * from claimed`,
    { ids: generationIds, count: generationIds.length, claimS: settings.claimS, leaseS: settings.leaseS, processId: settings.processId, fingerprints: settings.knownAccounts },
  );
  return rows.map(({ account_id: accountId, slot_no: slotNo, ...generation }) => ({
    generation,
    lease: { generationId: generation.id, accountId, slotNo },
  }));
}
