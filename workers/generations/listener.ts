import type { Knex } from 'knex';
import pg from 'pg';
import type { Logger } from '../../logger';
import type { RunningPart } from '../../api/services';

export type ChannelHandlers = Record<string, (payload: string) => void>;

/**
 * LISTEN on a dedicated session connection (a transaction-mode pooler would drop it silently, so it
 * never comes from the knex pool). The connection is reopened a second after it breaks;
 * `onReconnect` lets the caller catch up on what it may have missed meanwhile.
 */
export async function listenTo(db: Knex, channels: ChannelHandlers, log: Logger, onReconnect: () => void = () => undefined): Promise<RunningPart> {
  const connectionString = (db.client.config.connection as { connectionString: string }).connectionString;
  let client: pg.Client | null = null;
  let stopped = false;
  let retry: NodeJS.Timeout | null = null;

  const scheduleReconnect = (): void => {
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = null;
      connect().then(onReconnect, (error: unknown) => {
        log.warn({ err: error }, 'listener could not reconnect; trying again');
        scheduleReconnect();
      });
    }, 1000);
  };

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString, application_name: 'effects-backend-listener' });
    const broken = (error?: Error) => {
      if (client !== next) return;
      if (error) log.warn({ err: error }, 'listener connection broke; reconnecting');
      client = null;
      next.end().catch(() => undefined);
      scheduleReconnect();
    };
    next.on('notification', (message) => channels[message.channel]?.(message.payload ?? ''));
    next.on('error', broken);
    next.on('end', () => broken());
    try {
      await next.connect();
      for (const channel of Object.keys(channels)) await next.query(`listen "${channel}"`);
    } catch (error) {
      await next.end().catch(() => undefined);
      throw error;
    }
    if (stopped) await next.end();
    else client = next;
  };

  await connect();
  return {
    stop: async () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      const open = client;
      client = null;
      await open?.end().catch(() => undefined);
    },
  };
}
