import { setTimeout as sleepFor } from 'node:timers/promises';
import { backoffDelayMs } from '../../common/backoff';
import type { Circuit } from '../../common/circuit';

/**
 * What the gateways share about failures. A gateway answer is one of three things: delivered,
 * the token is dead (`invalid_token`, the device is forgotten), or a failure. A failure marked
 * `RetryableError` (429, 5xx, a lost connection, a timeout) is tried again inside the sender with
 * backoff and jitter up to `maxWaitMs` (`common/backoff.ts`), honouring the gateway's Retry-After;
 * when the tries run out, or the gateway asks for a longer wait than `maxWaitMs`, the error goes up
 * and the push job is retried later by pg-boss (skipping the devices already reached). Any other
 * error (a refused key, a malformed message) goes up at once. Every try goes through the gateway's
 * circuit, which counts the retryable failures: once it is open, a send fails at once
 * (`CircuitOpenError`) and the job waits for its own retry.
 */
export class RetryableError extends Error {
  constructor(message: string, readonly retryAfterMs: number | null = null) {
    super(message);
    this.name = 'RetryableError';
  }
}

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  /** The wait after the first failure (its upper end: the jitter takes up to half), doubled after each further one. */
  baseDelayMs: number;
  /** The longest wait: the backoff's cap, and the longest Retry-After honoured here. */
  maxWaitMs: number;
  sleep?: (ms: number) => Promise<unknown>;
  /** The jitter's randomness (tests). */
  random?: () => number;
}

export async function withRetries<T>(policy: RetryPolicy, circuit: Circuit, attempt: () => Promise<T>): Promise<T> {
  const sleep = policy.sleep ?? sleepFor;
  const backoff = { baseMs: policy.baseDelayMs, capMs: policy.maxWaitMs };
  for (let tried = 1; ; tried += 1) {
    try {
      return await circuit.run(attempt, (error) => error instanceof RetryableError);
    } catch (error) {
      if (!(error instanceof RetryableError) || tried >= policy.attempts) throw error;
      const wait = error.retryAfterMs ?? backoffDelayMs(tried, backoff, policy.random);
      if (wait > policy.maxWaitMs) throw error;
      await sleep(wait);
    }
  }
}

/** `Retry-After` as seconds or an HTTP date, in milliseconds from now; null when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | null {
  if (!header) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** HTTP answers a gateway documents as "try again later". */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
