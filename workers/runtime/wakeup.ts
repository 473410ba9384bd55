/**
 * Wakes a loop that waits between rounds: `wait(ms)` returns after `ms`, or at once when `wake()`
 * was called since the last wait began (a wake is never lost between two waits), or by the moment
 * a `wakeWithin` named.
 */
export class Wakeup {
  private woken = false;
  private resolveWait: (() => void) | null = null;
  /** Ends the wait under way by `at` (epoch ms) when that is sooner than it would end. */
  private endWaitBy: ((at: number) => void) | null = null;
  /** The latest end (epoch ms) of the next wait, from a `wakeWithin` between two waits. */
  private nextWaitEndsBy = Number.POSITIVE_INFINITY;

  wake(): void {
    this.woken = true;
    this.resolveWait?.();
  }

  /**
   * Work will be due in `ms`: the wait under way (or the next one) ends by then, and no sooner than
   * it would otherwise; 0 or less is `wake()`. A loop that knows when its next item is due need not
   * look for it now.
   */
  wakeWithin(ms: number): void {
    if (ms <= 0) return this.wake();
    const at = Date.now() + ms;
    if (this.endWaitBy) this.endWaitBy(at);
    else this.nextWaitEndsBy = Math.min(this.nextWaitEndsBy, at);
  }

  async wait(ms: number): Promise<void> {
    let endsAt = Math.min(Date.now() + ms, this.nextWaitEndsBy);
    this.nextWaitEndsBy = Number.POSITIVE_INFINITY;
    if (this.woken || endsAt <= Date.now()) {
      this.woken = false;
      // Even a wait of 0 yields to timers and I/O, so a loop that always has work cannot starve them.
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.resolveWait = null;
        this.endWaitBy = null;
        // Consumed by this wait; a wake after this point is kept for the next one.
        this.woken = false;
        resolve();
      };
      let timer = setTimeout(done, endsAt - Date.now());
      this.resolveWait = done;
      this.endWaitBy = (at) => {
        if (at >= endsAt) return;
        endsAt = at;
        clearTimeout(timer);
        timer = setTimeout(done, Math.max(0, at - Date.now()));
      };
    });
  }
}
