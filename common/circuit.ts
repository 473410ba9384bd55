import { backoffDelayMs, type Backoff } from './backoff';
import type { Logger } from './logger';

/**
 * A circuit breaker towards one outside service, so that a service that is down is noticed once:
 * after `failures` failures in a row the circuit opens and calls fail at once (`CircuitOpenError`)
 * without reaching the service; after a pause one caller's call goes through as the probe
 * (half-open), and its answer closes the circuit, or its failure opens it again for a longer pause
 * (`common/backoff.ts`: doubling to a cap, with jitter). Opening and closing each write one warning
 * line; the failed calls themselves are the callers' to log, below warning level (`isOutage`).
 *
 * The state lives in a `CircuitStore`: in the process (`memoryCircuitStore`) or in Postgres
 * (`db/circuits/`), where every process sees one circuit and only the process whose move opened or
 * closed it writes the line. Each move is a compare-and-set on the record's version, so callers
 * finishing at once (in one process or many) never lose a count or open it twice. The clock and the
 * jitter's randomness are injected for tests.
 */
export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitRecord {
  state: CircuitState;
  /** Closed: failures in a row so far. */
  failures: number;
  /** Pauses in a row (1 when it opened, one more per failed probe): the step of the next pause. */
  openings: number;
  /** Open: when a probe may go. Half-open: when the probe's lease lapses and another caller probes. Epoch ms. */
  retryAt: number | null;
  /** Bumped by every move; 0 for a circuit never stored. */
  version: number;
}

export type CircuitMove = Omit<CircuitRecord, 'version'>;

export interface CircuitStore {
  read(): Promise<CircuitRecord>;
  /** Stores `to` if the record is still at `from.version`: the stored record, or null when another move came first. */
  move(from: CircuitRecord, to: CircuitMove): Promise<CircuitRecord | null>;
}

/** The store of the circuit of each name. */
export type CircuitStores = (name: string) => CircuitStore;

export interface CircuitSettings {
  /** Failures in a row that open the circuit. */
  failures: number;
  /** The pause before a probe: about `baseMs` after opening, doubled per failed probe up to `capMs`. */
  pause: Backoff;
}

export interface CircuitOptions {
  /** The service, as the log lines name it (and the store keys it). */
  name: string;
  settings: CircuitSettings;
  /** How long a probe may take before another caller probes instead: the call's own time limit and a margin. */
  probeTimeoutMs: number;
  store: CircuitStore;
  log: Logger;
  clock?: () => number;
  random?: () => number;
}

export const closedCircuit: CircuitRecord = { state: 'closed', failures: 0, openings: 0, retryAt: null, version: 0 };

/** A call refused without reaching the service: its circuit is open. */
export class CircuitOpenError extends Error {
  override readonly name = 'CircuitOpenError';
  constructor(readonly circuit: string, readonly retryAt: number) {
    super(`${circuit}: unavailable (circuit open), not called`);
  }
}

/** Errors a circuit counted as its service's failure: the circuit's lines tell of the outage. */
const counted = new WeakSet<object>();

/**
 * The error (or one of its causes) is an outside service's unavailability that a circuit counted,
 * or a call its open circuit refused: a caller logs it below warning level, since the circuit
 * writes one warning when it opens and one when it closes.
 */
export function isOutage(error: unknown): boolean {
  for (let cause = error, depth = 0; typeof cause === 'object' && cause !== null && depth < 8; cause = (cause as { cause?: unknown }).cause, depth += 1) {
    if (cause instanceof CircuitOpenError || counted.has(cause)) return true;
  }
  return false;
}

export function memoryCircuitStore(): CircuitStore {
  let record = closedCircuit;
  return {
    read: async () => record,
    move: async (from, to) => {
      if (record.version !== from.version) return null;
      record = { ...to, version: from.version + 1 };
      return record;
    },
  };
}

interface Admission {
  /** This call is the probe of a half-open circuit, taken at this version. */
  probeVersion: number | null;
}

export class Circuit {
  private readonly clock: () => number;
  private readonly random: () => number;

  constructor(private readonly options: CircuitOptions) {
    this.clock = options.clock ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  get name(): string {
    return this.options.name;
  }

  /** The record as stored now (for tests and the operator's eye). */
  state(): Promise<CircuitRecord> {
    return this.options.store.read();
  }

  /**
   * Makes the call unless the circuit is open (then `CircuitOpenError`, at once). A throw that
   * `isFailure` says is the service's unavailability counts against it; anything else (an answer,
   * a refusal the service gave) shows it is there.
   */
  async run<T>(call: () => Promise<T>, isFailure: (error: unknown) => boolean): Promise<T> {
    const admission = await this.admit();
    let failed = false;
    try {
      return await call();
    } catch (error) {
      if (isFailure(error)) {
        failed = true;
        if (typeof error === 'object' && error !== null) counted.add(error);
      }
      throw error;
    } finally {
      await this.settle(admission, failed);
    }
  }

  private async admit(): Promise<Admission> {
    const { store, probeTimeoutMs } = this.options;
    for (;;) {
      let record: CircuitRecord;
      try {
        record = await store.read();
      } catch (error) {
        // A store that cannot be read guards nothing: the call goes, as without a circuit.
        this.storeFailed(error);
        return { probeVersion: null };
      }
      if (record.state === 'closed') return { probeVersion: null };
      const now = this.clock();
      if (record.retryAt !== null && record.retryAt > now) throw new CircuitOpenError(this.name, record.retryAt);
      // The pause is over (or the last probe's lease lapsed): whoever moves it first is the probe.
      let probing: CircuitRecord | null;
      try {
        probing = await store.move(record, { ...record, state: 'half_open', retryAt: now + probeTimeoutMs });
      } catch (error) {
        this.storeFailed(error);
        return { probeVersion: null };
      }
      if (probing) return { probeVersion: probing.version };
    }
  }

  private async settle(admission: Admission, failed: boolean): Promise<void> {
    const { store } = this.options;
    try {
      for (;;) {
        const record = await store.read();
        const next = this.next(record, admission, failed);
        if (!next) return;
        const moved = await store.move(record, next);
        if (moved) {
          this.announce(record, moved);
          return;
        }
      }
    } catch (error) {
      // The call's own outcome matters more than the circuit's count of it.
      this.storeFailed(error);
    }
  }

  /** The move an outcome asks for, or null when it changes nothing. */
  private next(record: CircuitRecord, admission: Admission, failed: boolean): CircuitMove | null {
    const isProbe = record.state === 'half_open' && admission.probeVersion === record.version;
    if (!failed) {
      if (record.state === 'closed') return record.failures > 0 ? { ...closedCircuit } : null;
      // Only the probe's answer closes it: a slow call sent before the outage proves nothing now.
      return isProbe ? { ...closedCircuit } : null;
    }
    if (record.state === 'closed') {
      const failures = record.failures + 1;
      return failures < this.options.settings.failures ? { ...record, failures } : this.opened(1);
    }
    return isProbe ? this.opened(record.openings + 1) : null;
  }

  private opened(openings: number): CircuitMove {
    return { state: 'open', failures: 0, openings, retryAt: this.clock() + backoffDelayMs(openings, this.options.settings.pause, this.random) };
  }

  private announce(from: CircuitRecord, to: CircuitRecord): void {
    const { log, settings } = this.options;
    const nextProbeInMs = to.retryAt === null ? undefined : to.retryAt - this.clock();
    if (from.state === 'closed' && to.state === 'open') {
      log.warn({ circuit: this.name, failures: settings.failures, nextProbeInMs }, `${this.name} unavailable: circuit open, calls fail fast until a probe gets an answer`);
    } else if (from.state !== 'closed' && to.state === 'closed') {
      log.warn({ circuit: this.name }, `${this.name} answers again: circuit closed`);
    } else if (to.state === 'open') {
      log.info({ circuit: this.name, openings: to.openings, nextProbeInMs }, `${this.name} still unavailable: the probe failed`);
    }
  }

  private storeFailed(error: unknown): void {
    this.options.log.info({ err: error, circuit: this.name }, 'circuit state unavailable; the call goes unguarded');
  }
}

/** The circuits of one kind of store, one per service name, made on first use. */
export class Circuits {
  private readonly made = new Map<string, Circuit>();

  constructor(private readonly options: Omit<CircuitOptions, 'name' | 'store' | 'probeTimeoutMs'> & { stores?: CircuitStores }) {}

  of(name: string, probeTimeoutMs: number): Circuit {
    let circuit = this.made.get(name);
    if (!circuit) {
      const { stores = memoryCircuitStore, ...options } = this.options;
      circuit = new Circuit({ ...options, name, probeTimeoutMs, store: stores(name) });
      this.made.set(name, circuit);
    }
    return circuit;
  }
}
