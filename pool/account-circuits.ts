import type { Knex } from 'knex';
import { backoffDelayMs, type Backoff } from '../common/backoff';
import type { Logger } from '../common/logger';
import { pollAccountTasksSooner } from '../db/generations/poll-account-tasks-sooner';
import { claimAccountProbe } from '../db/pool/claim-account-probe';
import { recordAccountAnswer } from '../db/pool/record-account-answer';
import { recordAccountFailure, type AccountFailure } from '../db/pool/record-account-failure';

export interface CircuitSettings {
  baseMs: number;
  capMs: number;
  /** Failures in a row that open an account's circuit. */
  circuitFailures: number;
}

/** Backoff steps precomputed for one failure statement: past the cap every step is the cap (with its jitter). */
const steps = 24;

/**
 * The circuit of each provider account, kept in Postgres beside its cooldown (`provider_accounts`),
 * so every process sees the same one. A call that gets no answer from the provider counts a failure:
 * the task that made it tries again after the account's backoff (doubling to a cap, with jitter,
 * `common/backoff.ts`), and no submission goes to the account before then. Once the failures in a
 * row reach the threshold the circuit opens: no submissions, polls deferred, and after each backoff
 * ONE probe (`claimAccountProbe`) of whichever process comes first. The first answer closes it.
 * A failed probe by a poll brings the account's deferred polls forward to its next retry, the task
 * that probed after them, so the probes go round the tasks rather than falling to one
 * (`pollFailed`); an answer that closes the circuit brings them to now, so they need not wait out
 * the probe's hold.
 * The guarded statements decide who tells: one warning when a circuit opens, one when it closes,
 * whatever the number of processes and tasks; a single failed call is only a debug line.
 */
export class AccountCircuits {
  /** Accounts this process saw fail and has not seen answer since. */
  private readonly failing = new Set<number>();
  private readonly backoff: Backoff;

  constructor(
    private readonly db: Knex,
    private readonly log: Logger,
    private readonly settings: CircuitSettings,
  ) {
    this.backoff = { baseMs: settings.baseMs, capMs: settings.capMs };
  }

  /** A submission or a lookup on the account got no answer: one more failure in a row. */
  async failed(accountId: number): Promise<void> {
    await this.recordFailure(accountId);
  }

  /**
   * A poll of one of the account's tasks got no answer (or its result's download): in how many ms
   * that task polls again. While the circuit is open that poll was the probe: the account's other
   * deferred tasks come back within the first half of a base step after its retry, in the order they
   * were deferred, and this one in the second half, after them, so the probes go round the tasks
   * rather than falling to one. A probe made by a submission or a lookup moves no poll: the tasks
   * keep waiting out its hold.
   */
  async pollFailed(accountId: number): Promise<number> {
    const failure = await this.recordFailure(accountId);
    if (!failure) return backoffDelayMs(1, this.backoff);
    // Each task comes back on its own jitter, never before the account's retry.
    if (!failure.open) return Math.max(failure.retryInMs, backoffDelayMs(failure.failures, this.backoff));
    const halfStepMs = this.settings.baseMs / 2;
    await pollAccountTasksSooner(this.db, accountId, { inMs: failure.retryInMs, spreadMs: halfStepMs });
    return failure.retryInMs + halfStepMs + Math.random() * halfStepMs;
  }

  /** The provider answered a call on the account: an account seen failing (here, or at the claim) is reset, its circuit closed. */
  async answered(accountId: number, failingAtClaim = false): Promise<void> {
    if (!failingAtClaim && !this.failing.has(accountId)) return;
    this.failing.delete(accountId);
    const closed = await recordAccountAnswer(this.db, accountId);
    if (!closed) return;
    this.log.warn({ accountId, account: closed.label, kind: closed.kind, openS: Math.round(closed.openS) }, 'provider account answers again: circuit closed');
    await pollAccountTasksSooner(this.db, accountId, { inMs: 0, spreadMs: this.settings.baseMs });
  }

  /**
   * Before a call on an account whose circuit was open at the claim: whether this caller may call
   * (it probes, or the circuit closed meanwhile), else in how many ms its task comes back.
   */
  async mayCall(accountId: number): Promise<{ go: boolean; retryInMs: number }> {
    const { capMs, baseMs } = this.settings;
    const probe = await claimAccountProbe(this.db, accountId, capMs);
    if (probe.go) return probe;
    // Half a base step after the retry, and up to another half the later it came within the
    // probe's hold: the deferred tasks come back in the order they came.
    const cameLate = Math.min(1, Math.max(0, (capMs - probe.retryInMs) / capMs));
    return { go: false, retryInMs: probe.retryInMs + (baseMs / 2) * (1 + cameLate) };
  }

  /** One more failure in a row (null: the account is gone), told once when it opens the circuit. */
  private async recordFailure(accountId: number): Promise<AccountFailure | null> {
    this.failing.add(accountId);
    const delaysMs = Array.from({ length: steps }, (_, index) => backoffDelayMs(index + 1, this.backoff));
    const failure = await recordAccountFailure(this.db, accountId, { threshold: this.settings.circuitFailures, delaysMs });
    if (failure?.opened) {
      this.log.warn(
        { accountId, account: failure.label, kind: failure.kind, failures: failure.failures },
        'provider account not answering: circuit open, no submissions to it and its polls deferred until a probe is answered',
      );
    }
    return failure;
  }
}
