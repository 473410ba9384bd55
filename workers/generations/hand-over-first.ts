/**
 * A slot's hand-over goes before the result's copy. When tasks finish together, their callbacks wake
 * this worker's dispatcher (the next submission on each freed slot) and its poll loop (reading the
 * outcome, copying the result into storage, its preview) at the same moment; on a busy machine the
 * copies then slow the submissions down, and the provider's slots idle meanwhile. So the poll loop,
 * before it claims due polls (and the photo checks ahead, before theirs), waits for a lull in the
 * hand-overs: the dispatcher's rounds and submissions under way have ended, and no submission has
 * started or ended for `lullMs`; at most `maxWaitMs` in all, so a steady flow of submissions delays
 * a result's copy by that much and no more.
 *
 * A lull, not only what is under way: the tasks of one burst end milliseconds apart, and a copy
 * started between two callbacks takes the CPU from the next hand-over. With no generation waiting
 * in line (`lineMayWait` false) a freed slot goes to no one, so a lone generation's result is
 * copied as soon as the rounds under way have ended.
 */
export class HandOverFirst {
  private readonly underWay = new Set<Promise<unknown>>();
  /** When a submission last started or ended (epoch ms): the lull counts from there. */
  private lastHandOverAt = Number.NEGATIVE_INFINITY;
  /**
   * Generations may wait in line: the dispatcher's last round did not see the line empty after its
   * claims (it sets this). A new one announces itself (NOTIFY of `pending`), so while this is false a
   * freed slot needs no round (the tick's rounds still look) and no hand-over follows it.
   */
  lineMayWait = true;

  constructor(private readonly timing: { lullMs: number; maxWaitMs: number }) {}

  /** A dispatcher round: the poll loop's next claim waits for it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.underWay.add(work);
    work.then(() => this.underWay.delete(work), () => this.underWay.delete(work));
    return work;
  }

  /** A submission: waited for like a round, and the lull counts again from its start and from its end. */
  handOver<T>(work: Promise<T>): Promise<T> {
    const seen = () => {
      this.lastHandOverAt = Date.now();
    };
    seen();
    work.then(seen, seen);
    return this.track(work);
  }

  /** Waits for a lull in the hand-overs (never more than `maxWaitMs`). */
  async handOversDone(): Promise<void> {
    // One turn of the event loop first: a dispatcher round woken by the same NOTIFY starts in it.
    await new Promise((resolve) => setImmediate(resolve));
    const deadline = Date.now() + this.timing.maxWaitMs;
    for (;;) {
      const now = Date.now();
      const quietInMs = this.lineMayWait ? this.lastHandOverAt + this.timing.lullMs - now : 0;
      if (now >= deadline || (this.underWay.size === 0 && quietInMs <= 0)) return;
      const underWay = this.underWay.size > 0 ? Promise.allSettled([...this.underWay]) : null;
      await settledWithin(underWay, Math.min(deadline - now, underWay ? Number.POSITIVE_INFINITY : quietInMs));
    }
  }
}

/** Resolves when `work` settles (null: never) or after `ms`, whichever comes first. */
async function settledWithin(work: Promise<unknown> | null, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    ...(work ? [work] : []),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
