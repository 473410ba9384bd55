import type { Knex } from 'knex';
import { freeSlot, usableAccount } from './free-slot';
import type { KnownAccounts } from './lease-slots';

/** How many slots look free right now (no locks taken: an estimate for sizing a fetch). */
export async function countFreeSlots(db: Knex, knownAccounts: KnownAccounts = null): Promise<number> {
  const { rows } = await db.raw<{ rows: { free: number }[] }>(
    `select count(*)::integer as free
     from provider_slots s join provider_accounts a on a.id = s.account_id
     where ${freeSlot('s')} and s.slot_no < a.slots and ${usableAccount('a')}`,
    { fingerprints: knownAccounts },
  );
  return rows[0].free;
}
