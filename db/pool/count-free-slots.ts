import type { Knex } from 'knex';
import type { ProviderKind } from '../../common/model-route';
import { freeSlot, usableAccount } from './free-slot';
import type { KnownAccounts } from './lease-slots';

/** How many slots of accounts of `kind` look free right now (no locks taken: an estimate). */
export async function countFreeSlots(db: Knex, kind: ProviderKind, knownAccounts: KnownAccounts = null): Promise<number> {
  const { rows } = await db.raw<{ rows: { free: number }[] }>(
    `select count(*)::integer as free
     from provider_slots s join provider_accounts a on a.id = s.account_id
     where a.kind = :kind and ${freeSlot('s')} and s.slot_no < a.slots and ${usableAccount('a')}`,
    { kind, fingerprints: knownAccounts },
  );
  return rows[0].free;
}
