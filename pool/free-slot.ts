/**
 * When a slot is free, the one rule every statement of the pool shares: no holder (a generation or
 * a user effect's moderation), or a lease that ran out (a crashed worker's slot comes back by
 * itself). `slot` is the alias of `provider_slots`.
 */
export function freeSlot(slot: string): string {
  return `((${slot}.generation_id is null and ${slot}.user_effect_id is null) or ${slot}.lease_expires_at < now())`;
}

/** An account whose slots may be leased: enabled, not cooling down after a 429, known to the caller (`:fingerprints`). */
export function usableAccount(account: string): string {
  return `${account}.enabled
    and (${account}.cooldown_until is null or ${account}.cooldown_until <= now())
    and (:fingerprints::text[] is null or ${account}.key_fingerprint = any(:fingerprints::text[]))`;
}
