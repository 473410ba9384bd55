import Router from '@koa/router';
import { pendingMigrations } from '../db/knex';
import { withTimeout } from '../db/listen-hub';
import { submitQueueOf } from '../db/queues';
import type { ApiContext } from './http/context';
import { briefOutageRetryAfterS } from './http/errors';

/** A database that does not answer within this long counts as unreachable. */
const readinessTimeoutMs = 2000;

/**
 * `/healthz`: the process answers. `/readyz`: the database answers (within two seconds), its
 * migrations are current and the job queue is there; a load balancer sends traffic only while this
 * is 200. Not ready is `503` with `Retry-After`, and `checks` says which part failed.
 */
export function operationsRouter(): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  let migrationsCurrent = false;

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', async (ctx) => {
    const { db, boss } = ctx.services;
    const checks: Record<string, boolean> = { database: false, migrations: false, queue: false };
    try {
      await withTimeout((async () => {
        await db.raw('select 1');
        checks.database = true;
        migrationsCurrent ||= (await pendingMigrations(db)) === 0;
        checks.migrations = migrationsCurrent;
        checks.queue = Boolean(await boss.getQueue(submitQueueOf('simulator')));
      })(), readinessTimeoutMs, 'the readiness check timed out');
    } catch (error) {
      ctx.services.log.warn({ err: error }, 'readiness check failed');
    }
    const ready = Object.values(checks).every(Boolean);
    ctx.status = ready ? 200 : 503;
    if (!ready) ctx.set('Retry-After', String(briefOutageRetryAfterS));
    ctx.body = { status: ready ? 'ready' : 'not_ready', checks };
  });

  return router;
}
