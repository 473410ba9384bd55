import pg from 'pg';
import type { Logger } from '../common/logger';
import type { Channel } from './channels';

/**
 * The per-process LISTEN hub: ONE dedicated session connection (a plain `pg.Client`, never a pool
 * or a transaction pooler, which would drop LISTEN silently) listens on every channel anything in
 * the process needs (the SSE streams of the web role, the wake-ups of the worker loops), and fans
 * each notification out in memory: to the subscribers of its object id, and to those of the whole
 * channel.
 *
 * The connection exists only while someone is subscribed: it opens with the first subscriber and
 * closes a little after the last one leaves. When it is lost (a restart, `pg_terminate_backend`,
 * a dead network found by a probe) the hub reconnects with backoff, LISTENs again and asks every
 * subscriber to resync: notifications sent while it was away are gone for good, so each stream
 * rereads its object and each loop looks for work, and nobody misses a change.
 */
export interface HubSubscriber {
  /** A notification about this subscriber's object (or on its channel) arrived (payload: the parsed JSON). */
  notify(payload: Record<string, unknown>): void;
  /** The connection was lost and is back: notifications may have been missed. */
  resync(): void;
}

export interface ListenHubOptions {
  connection: pg.ClientConfig;
  log: Logger;
  /** How long a subscribe waits for the connection before it fails. */
  connectTimeoutMs?: number;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** How long the connection stays open with no subscriber, so a reconnecting client finds it there. */
  idleCloseMs?: number;
}

export class ListenHub {
  /** By channel, then by object id (null: every notification of the channel). */
  private readonly subscribers = new Map<string, Map<string | null, Set<HubSubscriber>>>();
  private readonly reconnectListeners = new Set<() => void>();
  private subscriberCount = 0;
  private client: pg.Client | null = null;
  /** Channels LISTENed on the current client. */
  private listening = new Set<string>();
  /** The connection being made (first connect or reconnect loop), null when connected or idle. */
  private connecting: Promise<pg.Client> | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly settings: Required<Omit<ListenHubOptions, 'connection' | 'log'>>;
  private reconnects = 0;
  /** The end of the chain of statements sent on the connection (`inTurn`). */
  private statements: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: ListenHubOptions) {
    this.settings = {
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      reconnectMinMs: options.reconnectMinMs ?? 100,
      reconnectMaxMs: options.reconnectMaxMs ?? 5000,
      idleCloseMs: options.idleCloseMs ?? 10_000,
    };
  }

  /**
   * Subscribes to notifications on `channel` whose payload `id` is `objectId` (null: all of them).
   * Resolves once the channel is LISTENed, so anything committed after that reaches the subscriber;
   * returns the unsubscribe function.
   */
  async subscribe(channel: Channel, objectId: string | null, subscriber: HubSubscriber): Promise<() => void> {
    if (this.stopped) throw new Error('listen hub stopped');
    let byObject = this.subscribers.get(channel);
    if (!byObject) this.subscribers.set(channel, (byObject = new Map()));
    let set = byObject.get(objectId);
    if (!set) byObject.set(objectId, (set = new Set()));
    set.add(subscriber);
    this.subscriberCount += 1;
    this.cancelIdleClose();
    let subscribed = true;
    const unsubscribe = () => {
      if (!subscribed) return;
      subscribed = false;
      this.remove(channel, objectId, subscriber);
    };
    try {
      await this.listenOn(channel);
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /** Calls `listener` each time the connection was lost and is back (a metric counts it); returns the way to stop. */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** The backend pid of the listening connection, or null (tests kill it to prove recovery). */
  backendPid(): number | null {
    return (this.client as unknown as { processID?: number } | null)?.processID ?? null;
  }

  /** Cheap liveness probe for the heartbeat: a dead connection is dropped and replaced. */
  async probe(timeoutMs = 5000): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      await withTimeout(this.inTurn(() => client.query('select 1')), timeoutMs, 'listen connection probe timed out');
    } catch (error) {
      this.lost(client, error);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelIdleClose();
    const client = this.client;
    this.client = null;
    this.listening.clear();
    await client?.end().catch(() => undefined);
  }

  private remove(channel: string, objectId: string | null, subscriber: HubSubscriber): void {
    const byObject = this.subscribers.get(channel);
    const set = byObject?.get(objectId);
    if (!set?.delete(subscriber)) return;
    this.subscriberCount -= 1;
    if (set.size === 0) byObject!.delete(objectId);
    if (this.subscriberCount === 0) this.scheduleIdleClose();
  }

  private async listenOn(channel: string): Promise<void> {
    const client = this.client ?? (await withTimeout(this.connect(), this.settings.connectTimeoutMs, 'listen connection unavailable'));
    await this.inTurn(async () => {
      // A reconnect LISTENs every channel that has subscribers, this one included; so did a
      // subscriber to the same channel that came just before.
      if (this.listening.has(channel) || client !== this.client) return;
      await client.query(`LISTEN "${channel}"`);
      this.listening.add(channel);
    });
  }

  /**
   * Runs the hub's statements one after another on its connection: subscribers arriving together
   * and the heartbeat's probe would otherwise send them at once (node-pg queues them, with a
   * deprecation warning).
   */
  private inTurn<T>(statement: () => Promise<T>): Promise<T> {
    const turn = this.statements.then(statement);
    this.statements = turn.catch(() => undefined);
    return turn;
  }

  private connect(): Promise<pg.Client> {
    this.connecting ??= this.connectLoop().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connectLoop(): Promise<pg.Client> {
    for (let attempt = 0; ; attempt += 1) {
      if (this.stopped) throw new Error('listen hub stopped');
      const client = new pg.Client({ ...this.options.connection, keepAlive: true, application_name: 'effects-backend-listen' });
      client.on('error', (error) => this.lost(client, error));
      client.on('end', () => this.lost(client, null));
      client.on('notification', (message) => this.dispatch(message));
      try {
        await client.connect();
        const channels = [...this.subscribers.keys()];
        for (const channel of channels) await client.query(`LISTEN "${channel}"`);
        if (this.stopped) {
          await client.end().catch(() => undefined);
          throw new Error('listen hub stopped');
        }
        this.client = client;
        this.listening = new Set(channels);
        return client;
      } catch (error) {
        await client.end().catch(() => undefined);
        if (this.stopped) throw error;
        // With nobody waiting, there is nothing to reconnect for: the next subscriber starts over.
        if (this.subscriberCount === 0) throw error;
        const waitMs = Math.min(this.settings.reconnectMaxMs, this.settings.reconnectMinMs * 2 ** attempt);
        this.options.log.warn({ err: error, attempt, waitMs }, 'listen connection failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, waitMs * (0.75 + Math.random() / 2)));
      }
    }
  }

  private lost(client: pg.Client, error: unknown): void {
    if (client !== this.client) return;
    this.client = null;
    this.listening.clear();
    client.end().catch(() => undefined);
    if (this.stopped || this.subscriberCount === 0) return;
    this.options.log.warn({ err: error ?? undefined }, 'listen connection lost; reconnecting');
    this.connect().then(
      () => {
        this.reconnects += 1;
        for (const listener of this.reconnectListeners) listener();
        this.options.log.info({ reconnects: this.reconnects }, 'listen connection back; resyncing subscribers');
        for (const byObject of this.subscribers.values()) {
          for (const set of byObject.values()) for (const subscriber of set) subscriber.resync();
        }
      },
      (failure) => this.options.log.warn({ err: failure }, 'listen connection not restored'),
    );
  }

  private dispatch(message: pg.Notification): void {
    const byObject = this.subscribers.get(message.channel);
    if (!byObject || !message.payload) return;
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(message.payload);
    } catch {
      this.options.log.warn({ channel: message.channel }, 'notification payload is not JSON; ignored');
      return;
    }
    const interested = [...(typeof payload.id === 'string' ? byObject.get(payload.id) ?? [] : []), ...(byObject.get(null) ?? [])];
    for (const subscriber of interested) subscriber.notify(payload);
  }

  private scheduleIdleClose(): void {
    this.cancelIdleClose();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.subscriberCount > 0 || !this.client) return;
      const client = this.client;
      this.client = null;
      this.listening.clear();
      client.end().catch(() => undefined);
    }, this.settings.idleCloseMs);
    this.idleTimer.unref();
  }

  private cancelIdleClose(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }
}

/** `promise`, or a rejection with `message` after `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
