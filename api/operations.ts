import Router from '@koa/router';
import { pendingMigrations } from '../db/knex';
import type { ApiContext } from './http/context';

/**
 * `/healthz`: the process answers. `/readyz`: the database answers, its migrations are current and
 * the job queue is there; a load balancer sends traffic only while this is 200.
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
      await db.raw('select 1');
      checks.database = true;
      migrationsCurrent ||= (await pendingMigrations(db)) === 0;
      checks.migrations = migrationsCurrent;
      checks.queue = Boolean(await boss.getQueue('generation-submit'));
    } catch (error) {
      ctx.services.log.warn({ err: error }, 'readiness check failed');
    }
    const ready = Object.values(checks).every(Boolean);
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not_ready', checks };
  });

  return router;
}
