/**
 * How long to wait before the next try towards a service that failed `failures` times in a row:
 * doubling from `baseMs`, never above `capMs`, and spread at random over the upper half of that
 * ("equal jitter"), so that many callers that failed together do not all come back at once, while
 * none comes back sooner than half the step.
 */
export interface Backoff {
  baseMs: number;
  capMs: number;
}

export function backoffDelayMs(failures: number, backoff: Backoff, random: () => number = Math.random): number {
  const step = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.max(0, Math.min(failures, 52) - 1));
  return Math.round(step / 2 + random() * (step / 2));
}
