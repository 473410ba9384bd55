import type { Knex } from 'knex';
import type { KnownAccounts } from './lease-slots';

/** How many slots look free right now (no locks taken: an estimate for sizing a fetch). */
export async function countFreeSlots(db: Knex, knownAccounts: KnownAccounts = null): Promise<number> {
  const { rows } = await db.raw<{ rows: { free: number }[] }>(
    `select count(*)::integer as free
     from provider_slots s join provider_accounts a on a.id = s.account_id
     where (s.generation_id is null or s.lease_expires_at < now())
       and a.enabled and s.slot_no < a.slots
       and (a.cooldown_until is null or a.cooldown_until <= now())
       and (:fingerprints::text[] is null or a.key_fingerprint = any(:fingerprints::text[]))`,
    { fingerprints: knownAccounts },
  );
  return rows[0].free;
}
