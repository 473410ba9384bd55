import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import type { Channel } from '../../db/channels';
import { withTimeout, type HubSubscriber, type ListenHub } from '../../db/listen-hub';
import type { Services } from '../../services';
import type { ApiContext } from '../http/context';
import { errors } from '../http/errors';
import { listenReconnects, streamsOpen, streamsOpened, streamsRefused } from '../metric-definitions';
import { formatEvent, heartbeatFrame, SseWriter, sseHeaders } from './sse';
import { acquireStreamLease, releaseStreamLease, releaseProcessStreamLeases, renewStreamProcess, retireStreamProcess } from './stream-leases';

/**
 * The one stream mechanism behind every SSE endpoint (generation, payment, user-effect). The
 * contract's common rules live here, once:
 * - the first event is a snapshot of the current state, also when it is already terminal;
 * - later events follow changes, announced by NOTIFY on the kind's channel: each announcement makes
 *   the stream reread its object (so an old or duplicate announcement can never move it backwards)
 *   and write an event when what it shows changed; a kind whose terminal states are final may read
 *   one from the announcement itself (`finalState`): nothing can follow it, so there is nothing to
 *   reread;
 * - the server ends the stream at a terminal state (each kind says which states are terminal);
 * - `: ping` comments keep proxies from timing the connection out; the same beat renews the stream
 *   slots of this process;
 * - opening takes a slot under the per-user cap shared by all kinds and all web processes
 *   (`429 too_many_streams`); a disconnect frees the slot, the subscription and every timer.
 */
export type StreamKind = 'generation' | 'payment' | 'user_effect';

export interface StreamSpec<State> {
  kind: StreamKind;
  /** The NOTIFY channel whose JSON payloads carry `id` (the object id) among small fields. */
  channel: Channel;
  objectId: string;
  userId: string;
  /** Reads the current state; null when the object is absent or not the user's (`404`, or the stream ends). */
  snapshot: () => Promise<State | null>;
  isTerminal: (state: State) => boolean;
  /**
   * The state an announcement names when that state is terminal and final (no later change can
   * follow it), else null: it is shown without a reread. Absent: every announcement is reread.
   */
  finalState?: (announcement: Record<string, unknown>) => State | null;
  /** The `event:` name, or null for bare `data:` lines (the payment stream). */
  event: string | null;
  /** The event's `data` object. */
  render: (state: State) => object;
}

/** Heartbeat ticks a second (see `beat`). */
const ticksPerSecond = 10;

type CloseReason = 'terminal' | 'client' | 'gone' | 'slow' | 'shutdown';

declare module '../http/context' {
  interface ApiContextExtras {
    /** The SSE stream mechanism of this process; `createApp` makes one per app. */
    realtime: Realtime;
  }
}

/**
 * Opens an SSE stream on this request: checks the object (`404`), takes a stream slot (`429`), then
 * hands the response over to the stream and returns, so the middleware chain finishes (the request
 * log records the open) while the stream lives on.
 */
export function openStream<State>(ctx: ApiContext, spec: StreamSpec<State>): Promise<void> {
  return ctx.realtime.open(ctx, spec);
}

/** The streams of one web process: their subscriptions on the process's LISTEN hub, their stream slots, their heartbeat. */
export class Realtime {
  /** Names this process's stream slots in `stream_leases`. */
  readonly processId = randomUUID();
  private readonly hub: ListenHub;
  private readonly stopCountingReconnects: () => void;
  private readonly streams = new Set<LiveStream<unknown>>();
  /**
   * The streams by the tick of the heartbeat cycle that pings them: a tick visits only its own
   * share, so a beat's work follows the pings it sends, not every stream the process holds.
   */
  private readonly pingCycle: Set<LiveStream<unknown>>[];
  private nextPingSlot = 0;
  /** Slots whose release failed (or whose taking may have committed unseen): the next renewal deletes them. */
  private readonly unreleased = new Set<string>();
  /** Rereads after notifications share a part of the pool, so a burst never starves API requests. */
  readonly rereads: pLimit.Limit;
  private heartbeat: NodeJS.Timeout | null = null;
  private ticks = 0;
  private beating = false;
  private stopping = false;

  constructor(private readonly services: Services) {
    this.hub = services.listenHub;
    this.stopCountingReconnects = this.hub.onReconnect(() => listenReconnects.inc());
    this.rereads = pLimit(Math.max(2, Math.floor(services.config.databasePoolSize / 2)));
    this.pingCycle = Array.from({ length: services.config.streams.heartbeatS * ticksPerSecond }, () => new Set());
  }

  get log(): Services['log'] {
    return this.services.log;
  }

  /** Streams open in this process. */
  get openStreams(): number {
    return this.streams.size;
  }

  /** The backend pid of the LISTEN connection, or null when it is not connected. */
  listenBackendPid(): number | null {
    return this.hub.backendPid();
  }

  async open<State>(ctx: ApiContext, spec: StreamSpec<State>): Promise<void> {
    if (this.stopping) throw errors.brieflyUnavailable();
    const { db, config } = this.services;
    const stream = new LiveStream<State>(spec, new SseWriter(ctx.res), this);
    ctx.res.once('close', () => stream.close('client'));

    // Subscribed (LISTEN in effect) before the snapshot is read: a change committed after the read
    // is then always announced; one committed in between is announced and deduplicated.
    stream.attach(await this.hub.subscribe(spec.channel, spec.objectId, stream));
    try {
      const state = await spec.snapshot();
      if (state === null) throw errors.notFound();
      let leaseId: string | null;
      try {
        leaseId = await acquireStreamLease(db, {
          id: stream.leaseId, userId: spec.userId, processId: this.processId, kind: spec.kind, objectId: spec.objectId,
        }, { cap: config.streams.capPerUser, leaseS: config.streams.leaseS });
      } catch (error) {
        // The insert may have committed though its answer never came.
        this.dropLater(stream.leaseId);
        throw error;
      }
      if (leaseId === null) {
        streamsRefused.inc({ kind: spec.kind });
        throw errors.tooManyStreams();
      }
      // The same id as read from the wire: one flat string, where `randomUUID` built it of many pieces.
      stream.leaseId = leaseId;
      stream.leased = true;
      if (this.stopping) throw errors.brieflyUnavailable();
      // The client left while the slot was taken: closing already ran, except the release.
      if (stream.closed) return this.forget(stream as LiveStream<unknown>, 'client');
      // The response is the stream's from here on; Koa must not write it.
      ctx.status = 200;
      ctx.respond = false;
      releaseKoaContext(ctx.res);
      stream.writer.open(sseHeaders);
      stream.pingSlot = this.nextPingSlot++ % this.pingCycle.length;
      this.pingCycle[stream.pingSlot].add(stream as LiveStream<unknown>);
      this.streams.add(stream as LiveStream<unknown>);
      streamsOpen.inc({ kind: spec.kind });
      streamsOpened.inc({ kind: spec.kind });
      this.startHeartbeat();
      stream.start(state);
    } catch (error) {
      stream.close('gone');
      throw error;
    }
  }

  /** Ends every stream (the web role is stopping; their subscriptions leave the LISTEN hub with them) and frees this process's slots. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    for (const stream of [...this.streams]) stream.close('shutdown');
    // Bounded: with the database gone the slots simply lapse, and shutdown must not wait for it.
    await withTimeout(releaseProcessStreamLeases(this.services.db, this.processId), 2000, 'timed out')
      .catch((error) => this.services.log.warn({ err: error }, 'could not release stream slots at shutdown; they lapse'));
    this.stopCountingReconnects();
  }

  /** Settles once the stream's slot is free (or left to the heartbeat); never rejects. */
  forget(stream: LiveStream<unknown>, reason: CloseReason): Promise<void> {
    if (this.streams.delete(stream)) streamsOpen.dec({ kind: stream.spec.kind });
    this.pingCycle[stream.pingSlot].delete(stream);
    // At shutdown one statement frees them all. If this fails, the next heartbeat deletes the row.
    if (!stream.leased || reason === 'shutdown') return Promise.resolve();
    stream.leased = false;
    const { leaseId } = stream;
    return releaseStreamLease(this.services.db, leaseId).catch((error) => {
      this.dropLater(leaseId);
      this.services.log.warn({ err: error }, 'stream slot release failed; the heartbeat drops it');
    });
  }

  /** Leaves a slot to the heartbeat's renewal, which runs until none is left. */
  private dropLater(leaseId: string): void {
    if (this.stopping) return;
    this.unreleased.add(leaseId);
    this.startHeartbeat();
  }

  /**
   * Ten ticks a second. Each stream is pinged once every `heartbeatS` seconds, in its own tick of
   * the cycle, so a tick writes a tenth of a second's pings: a second's worth at once (thousands at
   * 100,000 streams) would stall every event behind it. The process's row is renewed every
   * `heartbeatS` seconds, and at least three times per lease.
   */
  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => void this.beat(), 1000 / ticksPerSecond);
    this.heartbeat.unref();
  }

  private async beat(): Promise<void> {
    const { heartbeatS, leaseS } = this.services.config.streams;
    this.ticks += 1;
    for (const stream of this.pingCycle[this.ticks % this.pingCycle.length]) stream.ping();
    const renewEveryS = Math.max(1, Math.min(heartbeatS, Math.floor(leaseS / 3)));
    if (this.ticks % (renewEveryS * ticksPerSecond) !== 0 || this.beating) return;
    this.beating = true;
    try {
      const unreleased = [...this.unreleased];
      await renewStreamProcess(this.services.db, this.processId, leaseS, unreleased);
      for (const id of unreleased) this.unreleased.delete(id);
      await this.hub.probe();
    } catch (error) {
      this.services.log.warn({ err: error }, 'stream heartbeat: renewing slots failed');
    } finally {
      this.beating = false;
    }
    // The renewal after the last stream closed has dropped any slot left behind; nothing to renew now.
    if (this.streams.size === 0 && this.unreleased.size === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
      await retireStreamProcess(this.services.db, this.processId)
        .catch((error) => this.services.log.warn({ err: error }, 'stream heartbeat: could not retire the process row; it lapses'));
    }
  }
}

/**
 * Koa hands `on-finished` a callback that holds the request's whole context (request, response,
 * state, parsed URL) until the response ends: for a stream, as long as it is open, though Koa no
 * longer writes that response. The callback only passes an error of the ended response on to Koa's
 * error handler, and a stream's end is its own business (its `close` handler), so it lets go of
 * the callback: kilobytes a stream. The field is on-finished's; without it nothing changes.
 */
function releaseKoaContext(response: ApiContext['res']): void {
  const finished = (response as { __onFinished?: { queue: unknown[] | null } }).__onFinished;
  if (finished?.queue) finished.queue = [];
}

/** One open stream. Rereads are serialized and coalesced: at most one runs and one waits. */
class LiveStream<State> implements HubSubscriber {
  leaseId: string = randomUUID();
  /** Which tick of the heartbeat cycle pings this stream. */
  pingSlot = 0;
  leased = false;
  closed = false;
  private started = false;
  private lastSent: string | null = null;
  private running = false;
  private again = false;
  private forceNext = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    readonly spec: StreamSpec<State>,
    readonly writer: SseWriter,
    /** Its process's streams (one reference a stream, rather than closures of its own). */
    private readonly owner: Realtime,
  ) {}

  attach(unsubscribe: () => void): void {
    if (this.closed) unsubscribe();
    else this.unsubscribe = unsubscribe;
  }

  notify(announcement: Record<string, unknown>): void {
    const final = this.started && !this.closed ? this.spec.finalState?.(announcement) : null;
    // A reread under way then finds the stream closed and writes nothing.
    if (final) this.show(final, false);
    else this.schedule(false);
  }

  /** After a lost LISTEN connection: send a fresh snapshot even if nothing seems to have changed. */
  resync(): void {
    this.schedule(this.started);
  }

  /** Writes the snapshot; announcements that came while it was read get their reread now. */
  start(state: State): void {
    this.started = true;
    this.show(state, true);
    if (this.again && !this.closed) {
      this.again = false;
      this.schedule(false);
    }
  }

  ping(): void {
    if (!this.closed && !this.writer.write(heartbeatFrame)) this.close('slow');
  }

  close(reason: CloseReason): void {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.unsubscribe?.();
    const released = this.owner.forget(this as LiveStream<unknown>, reason);
    if (reason === 'shutdown') this.writer.end(true);
    // The slot is free before the client sees the end, so opening the next stream at once never
    // meets a cap still counting this one.
    else if (reason !== 'client') void released.then(() => this.writer.end());
  }

  private schedule(force: boolean): void {
    if (this.closed) return;
    this.forceNext ||= force;
    if (!this.started || this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    try {
      do {
        this.again = false;
        const force = this.forceNext;
        this.forceNext = false;
        await this.refresh(force);
      } while (this.again && !this.closed);
    } finally {
      this.running = false;
    }
  }

  private async refresh(force: boolean): Promise<void> {
    let state: State | null;
    try {
      state = await this.owner.rereads(this.spec.snapshot);
    } catch (error) {
      // The database is away for a moment: try again, or a terminal status could be missed.
      this.owner.log.warn({ err: error, kind: this.spec.kind }, 'stream reread failed; retrying');
      this.forceNext ||= force;
      this.retryTimer ??= setTimeout(() => {
        this.retryTimer = null;
        this.schedule(false);
      }, 1000);
      return;
    }
    if (this.closed) return;
    if (state === null) this.close('gone');
    else this.show(state, force);
  }

  private show(state: State, force: boolean): void {
    const data = JSON.stringify(this.spec.render(state));
    if (force || data !== this.lastSent) {
      if (!this.writer.write(formatEvent(this.spec.event, data))) return this.close('slow');
      this.lastSent = data;
    }
    if (this.spec.isTerminal(state)) this.close('terminal');
  }
}
