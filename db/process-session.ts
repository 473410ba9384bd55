import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import type { Logger } from '../common/logger';

/**
 * This process's own Postgres session, held for as long as the process lives and named
 * `effects-process <id>` (its `application_name`). What the process claims names it by `id`
 * (`generations.claimed_by`), and `process_is_alive(id)` in SQL says whether the session is still
 * there. A process that dies (SIGKILL, out of memory, a lost machine) loses its session at once
 * (the kernel closes the socket; for a vanished host, the short TCP keepalives below), so the sweeps
 * take its claims back within seconds instead of waiting for them to run out.
 *
 * A session lost while the process lives (a Postgres restart) is opened again at once. Claims taken
 * back in between are safe: every step is a guarded statement, and a submission whose answer was
 * not recorded is looked up at the provider, never sent again blind. Like LISTEN, this needs a real
 * session: not through a transaction-mode pooler.
 */
export class ProcessSession {
  readonly id = randomUUID();
  private client: pg.Client | null = null;
  /** Aborted by `stop()`: ends a reconnect's back-off at once. */
  private readonly stopping = new AbortController();
  /** The reconnect under way, if any: `stop()` waits for it, so no session opens after `stop()`. */
  private reconnecting: Promise<void> | null = null;

  private constructor(
    private readonly connection: pg.ClientConfig,
    private readonly log: Logger,
  ) {}

  static async start(connection: pg.ClientConfig, log: Logger): Promise<ProcessSession> {
    const session = new ProcessSession(connection, log);
    const client = await session.connect();
    const { rows } = await client.query<{ visible: boolean }>(
      'select exists (select 1 from pg_stat_activity where application_name = $1) as visible', [processSessionName(session.id)]);
    if (!rows[0].visible) log.warn({ session: session.id }, 'this session is not visible in pg_stat_activity: a dead process is noticed only when its claims run out');
    return session;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.reconnecting;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      ...this.connection,
      application_name: processSessionName(this.id),
      connectionTimeoutMillis: 5000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 5000,
      // The server's side of the same: a host that vanished without closing its socket is gone within ~15 s.
      options: '-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=5',
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    await client.connect();
    this.client = client;
    return client;
  }

  private lost(client: pg.Client): void {
    if (client !== this.client || this.stopped) return;
    this.client = null;
    client.end().catch(() => undefined);
    this.log.warn({ session: this.id }, 'process session lost; opening it again');
    this.reconnecting = this.reconnect().finally(() => { this.reconnecting = null; });
  }

  /** Opens the session again; one that opens after `stop()` began is ended by `stop()`, which waits for this. */
  private async reconnect(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt += 1) {
      try {
        await this.connect();
        if (!this.stopped) this.log.info({ session: this.id }, 'process session back');
        return;
      } catch {
        await delay(Math.min(2000, 100 * 2 ** attempt), undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
  }
}

/** The `application_name` of a process's session; `process_is_alive` (migration 20261124002001) looks for it. */
function processSessionName(id: string): string {
  return `effects-process ${id}`;
}
