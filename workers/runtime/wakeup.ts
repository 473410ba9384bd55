/**
 * Wakes a loop that waits between rounds: `wait(ms)` returns after `ms`, or at once when `wake()`
 * was called since the last wait began (a wake is never lost between two waits).
 */
export class Wakeup {
  private woken = false;
  private resolveWait: (() => void) | null = null;

  wake(): void {
    this.woken = true;
    this.resolveWait?.();
  }

  async wait(ms: number): Promise<void> {
    if (this.woken || ms <= 0) {
      this.woken = false;
      // Even a wait of 0 yields to timers and I/O, so a loop that always has work cannot starve them.
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.resolveWait = null;
        // Consumed by this wait; a wake after this point is kept for the next one.
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.resolveWait = done;
    });
  }
}
