import type { Knex } from 'knex';
import { lockedFreeSlots } from './free-slot';

/**
 * Key fingerprints of the accounts the caller can use (a worker leases only slots of accounts whose
 * key it was configured with, so a rolling change of PROVIDER_ACCOUNTS never hands a worker a slot it
 * cannot submit on); null: any account.
 */
export type KnownAccounts = string[] | null;

export interface Lease {
  generationId: string;
  accountId: number;
  slotNo: number;
}

/**
 * Leases one free slot to each of `generationIds` (as many as there are free slots), in ONE
 * guarded statement over `lockedFreeSlots`: two workers can never lease the same slot, and a slot
 * whose lease ran out counts as free, so a crashed worker's slot comes back by itself. Accounts that
 * are disabled or cooling down after a 429 are skipped, and so are accounts outside `knownAccounts`.
 */
export async function leaseSlots(db: Knex, generationIds: string[], leaseS: number, knownAccounts: KnownAccounts = null): Promise<Lease[]> {
  if (!generationIds.length) return [];
  const { rows } = await db.raw<{ rows: { generation_id: string; account_id: number; slot_no: number }[] }>(
    `with wanted as materialized (
       select generation_id, rank from unnest(:ids::uuid[]) with ordinality as w (generation_id, rank)
     ), free as materialized (${lockedFreeSlots(':count')})
     update provider_slots s
     set generation_id = w.generation_id, user_effect_id = null, lease_expires_at = now() + :leaseS * interval '1 second'
     from free f join wanted w on w.rank = f.rank
     where s.account_id = f.account_id and s.slot_no = f.slot_no
     returning s.generation_id, s.account_id, s.slot_no`,
    { ids: generationIds, count: generationIds.length, leaseS, fingerprints: knownAccounts },
  );
  return rows.map((row) => ({ generationId: row.generation_id, accountId: row.account_id, slotNo: row.slot_no }));
}
