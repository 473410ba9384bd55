/** One unit of an account's concurrency cap, held by a task from its submission until it finishes. */
export interface Slot {
  apiKey: string;
  /** When the task is expected to finish; the earliest one tells a refused client when to come back. */
  finishAt: number;
}

/** Concurrency caps of the simulated provider accounts. */
export class AccountSlots {
  private readonly held = new Map<string, Set<Slot>>();

  /** A slot, or null when the account already runs `cap` tasks. */
  acquire(apiKey: string, cap: number, finishAt: number): Slot | null {
    const slots = this.held.get(apiKey) ?? new Set<Slot>();
    if (slots.size >= cap) return null;
    const slot = { apiKey, finishAt };
    slots.add(slot);
    this.held.set(apiKey, slots);
    return slot;
  }

  release(slot: Slot): void {
    const slots = this.held.get(slot.apiKey);
    if (!slots?.delete(slot)) return;
    if (slots.size === 0) this.held.delete(slot.apiKey);
  }

  /** Whole seconds until the account's first slot is expected to free up, at least one. */
  retryAfterS(apiKey: string, now: number): number {
    const finishAts = [...(this.held.get(apiKey) ?? [])].map((slot) => slot.finishAt);
    const firstFree = finishAts.length === 0 ? now : Math.min(...finishAts);
    return Math.max(1, Math.ceil((firstFree - now) / 1000));
  }

  running(): Record<string, number> {
    return Object.fromEntries([...this.held].map(([apiKey, slots]) => [apiKey, slots.size]));
  }
}
