import Router from '@koa/router';
import type { Middleware } from 'koa';
import { databaseUrlOf } from '../../db/knex';
import { removeByOperator } from '../../db/user-effects/remove-by-operator';
import { sendPage } from '../../media/pages/headers';
import type { RunningPart, Services } from '../../services';
import { replayFailed } from '../../services/generations/replay-failed';
import { bodyParser } from '../http/body';
import type { ApiContext } from '../http/context';
import { errors, type ErrorDetail } from '../http/errors';
import { isUuid } from '../../common/validation';
import { isConsolePath, operatorAccess } from './access';
import { readActivity, activityPage } from './activity';
import { failuresPage, failureWindowS, readFailures, replayResultPage } from './failures';
import { checkFormToken, sameOriginWrites } from './form-guard';
import { archiveForm, marketplacePage, readMarketplace } from './marketplace';
import { overviewPage, readOverview } from './overview';
import { paymentsPage, readOpenPayments } from './payments';
import { poolPage, readPool } from './pool';
import { queueDashboard } from './queue-dashboard';

type ConsoleMiddleware = Middleware<ApiContext['state'], ApiContext>;

/** Pages with a form may post to the console itself, nowhere else. */
const formPolicy = { formAction: ["'self'"] };

/** Most failures one "replay all" takes (the script's default limit). */
const replayLimit = 1000;

/** An error code as the pipeline writes them: short, printable. */
const errorCodeShape = /^[a-z0-9_.:-]{1,64}$/;

function consoleRouter(): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  router.get('/ops', async (ctx) => sendPage(ctx, { html: overviewPage(await readOverview(ctx.services.db, ctx.services.boss)) }));
  router.get('/ops/pool', async (ctx) => sendPage(ctx, { html: poolPage(await readPool(ctx.services.db)) }));
  router.get('/ops/activity', async (ctx) => sendPage(ctx, { html: activityPage(await readActivity(ctx.services.db, ctx.services.boss)) }));
  router.get('/ops/failed', async (ctx) => {
    const code = typeof ctx.query.code === 'string' && errorCodeShape.test(ctx.query.code) ? ctx.query.code : null;
    sendPage(ctx, { html: failuresPage(ctx.services.config, await readFailures(ctx.services.db, code)), policy: formPolicy });
  });
  router.post('/ops/failed/replay', async (ctx) => {
    checkFormToken(ctx);
    const { id, error_code: errorCode } = ctx.request.body as Record<string, unknown>;
    const problems: ErrorDetail[] = [];
    if ((id === undefined) === (errorCode === undefined)) problems.push({ loc: ['body'], msg: 'send id or error_code', type: 'missing' });
    if (id !== undefined && !(typeof id === 'string' && isUuid(id))) problems.push({ loc: ['body', 'id'], msg: 'not a generation id', type: 'uuid' });
    if (errorCode !== undefined && !(typeof errorCode === 'string' && errorCodeShape.test(errorCode))) {
      problems.push({ loc: ['body', 'error_code'], msg: 'not an error code', type: 'pattern' });
    }
    if (problems.length) throw errors.validation(problems);
    const { services } = ctx;
    const outcomes = await replayFailed(services, typeof id === 'string'
      ? { ids: [id], errorCode: null, since: null, until: null, limit: 1, apply: true }
      : { ids: [], errorCode: errorCode as string, since: new Date(Date.now() - failureWindowS * 1000), until: null, limit: replayLimit, apply: true });
    services.log.info({
      operator: services.config.ops.user,
      selection: typeof id === 'string' ? { id } : { errorCode },
      replayed: outcomes.filter((outcome) => outcome.action === 'replayed').map((outcome) => ({ failedId: outcome.failedId, newId: outcome.newId })),
      skipped: outcomes.filter((outcome) => outcome.action === 'skipped').length,
    }, 'ops: replay of failed generations');
    sendPage(ctx, { html: replayResultPage(outcomes) });
  });
  router.get('/ops/payments', async (ctx) => sendPage(ctx, { html: paymentsPage(await readOpenPayments(ctx.services.db)) }));
  router.get('/ops/marketplace', async (ctx) => {
    sendPage(ctx, { html: marketplacePage(ctx.services.config, await readMarketplace(ctx.services.db, ctx.services.boss, ctx.query)), policy: formPolicy });
  });
  router.post('/ops/marketplace/archive', async (ctx) => {
    checkFormToken(ctx);
    const form = archiveForm(ctx.request.body as Record<string, unknown>);
    const { services } = ctx;
    const removal = await removeByOperator(services.db, services.boss, form);
    services.log.info({
      operator: services.config.ops.user,
      userEffectId: form.userEffectId,
      reason: form.reason,
      outcome: removal.outcome,
      ...(removal.outcome === 'archived' ? { authorId: removal.userEffect.user_id, reversedEarnings: removal.reversedEarnings } : {}),
    }, 'ops: archive of a user effect');
    // Back to the page (303: the browser gets it, and a reload does not post again), which says what happened.
    ctx.status = 303;
    ctx.redirect(`/ops/marketplace?${removal.outcome}=${form.userEffectId}`);
  });
  return router;
}

/**
 * The operator console (`/ops`, README "Operators"): server-rendered pages in the browser pages'
 * kit (`media/pages/`) under their strict policy, and the pg-boss dashboard at `/ops/queues`. Every
 * console path goes through the operator's credentials first, then the same-origin rule for
 * writes; the console's forms carry their token (`form-guard.ts`). Mounted before the app's body
 * parser (the dashboard reads its own bodies); the console's forms are parsed here.
 */
export function operatorConsole(services: Services): RunningPart & { mount: ConsoleMiddleware } {
  const access = operatorAccess();
  const sameOrigin = sameOriginWrites();
  const dashboard = queueDashboard(services, databaseUrlOf(services.db));
  const parseBody = bodyParser(services.config.jsonBodyLimitBytes) as ConsoleMiddleware;
  const router = consoleRouter();
  const routes = router.routes() as ConsoleMiddleware;
  const allowedMethods = router.allowedMethods() as ConsoleMiddleware;
  const pages: ConsoleMiddleware = (ctx) => parseBody(ctx, () => routes(ctx, () => allowedMethods(ctx, async () => undefined)));
  return {
    mount: async (ctx, next) => {
      if (!isConsolePath(ctx.path)) return next();
      // Unknown console paths end here (404), after the credentials: nothing under /ops is public.
      await access(ctx, () => sameOrigin(ctx, () => dashboard.mount(ctx, () => pages(ctx, async () => undefined))));
    },
    stop: () => dashboard.close(),
  };
}
