/**
 * When a slot is free, the one rule every statement of the pool shares: no holder (a generation or
 * a user effect's moderation), or a lease that ran out (a crashed worker's slot comes back by
 * itself). `slot` is the alias of `provider_slots`.
 */
export function freeSlot(slot: string): string {
  return `((${slot}.generation_id is null and ${slot}.user_effect_id is null) or ${slot}.lease_expires_at < now())`;
}

/**
 * The body of a CTE (materialize it, so the locking runs exactly once: a re-scan could skip-lock
 * other rows) that locks up to `limit` (an SQL expression: a binding, or a scalar subquery of the
 * statement) free slots of usable accounts `for update skip locked`, so two leasers never take the
 * same one, ranked slot 0 of every account before slot 1 of any (spreading the load over
 * accounts): `account_id, slot_no, rank`.
 */
export function lockedFreeSlots(limit: string): string {
  return `select account_id, slot_no, row_number() over (order by slot_no, account_id) as rank
  from (
    select s.account_id, s.slot_no
    from provider_slots s join provider_accounts a on a.id = s.account_id
    where ${freeSlot('s')} and s.slot_no < a.slots and ${usableAccount('a')}
    order by s.slot_no, s.account_id
    limit ${limit}
    for update of s skip locked
  ) locked`;
}

/**
 * An account whose slots may be leased: enabled, not cooling down after a 429, not backing off after
 * calls the provider did not answer (nor, circuit open, before its probe: `pool/account-circuits.ts`),
 * known to the caller (`:fingerprints`).
 */
export function usableAccount(account: string): string {
  return `${account}.enabled
    and (${account}.cooldown_until is null or ${account}.cooldown_until <= now())
    and (${account}.retry_at is null or ${account}.retry_at <= now())
    and (:fingerprints::text[] is null or ${account}.key_fingerprint = any(:fingerprints::text[]))`;
}
