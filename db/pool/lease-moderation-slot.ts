import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { freeSlot, usableAccount } from './free-slot';
import type { KnownAccounts } from './lease-slots';

export interface ModerationLease {
  userEffectId: string;
  accountId: number;
  slotNo: number;
}

/**
 * Leases one free slot to a user effect's moderation, in one guarded statement with the same rule
 * and order as a generation's lease (`lease-slots.ts`): `for update skip locked`, so a generation
 * and a moderation never get the same slot. A slot of an account of `kind`, the kind of the
 * moderation's route; null when none is free.
 */
export async function leaseModerationSlot(db: Knex, userEffectId: string, kind: ProviderKind, leaseS: number, knownAccounts: KnownAccounts = null): Promise<ModerationLease | null> {
  const { rows: [row] } = await db.raw<{ rows: { account_id: number; slot_no: number }[] }>(
    `with free as materialized (
       select s.account_id, s.slot_no
       from provider_slots s join provider_accounts a on a.id = s.account_id
       where a.kind = :kind and ${freeSlot('s')} and s.slot_no < a.slots and ${usableAccount('a')}
       order by s.slot_no, s.account_id
       limit 1
       for update of s skip locked
     )
     update provider_slots s
     set user_effect_id = :userEffectId, generation_id = null, lease_expires_at = now() + :leaseS * interval '1 second'
     from free f
     where s.account_id = f.account_id and s.slot_no = f.slot_no
     returning s.account_id, s.slot_no`,
    { userEffectId, kind, leaseS, fingerprints: knownAccounts },
  );
  return row ? { userEffectId, accountId: row.account_id, slotNo: row.slot_no } : null;
}
