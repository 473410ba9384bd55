import type { Middleware } from 'koa';
import { recordTaskCallback } from '../../db/generations/record-task-callback';
import { providerWebhooks, type ProviderWebhooks } from '../../clients/providers/provider-webhooks';
import { taskCallbackPath, validTaskCallback } from '../../clients/providers/task-callback';
import { providerKinds, type ProviderKind } from '../../common/model-route';
import type { Config } from '../../config';
import type { ApiContext } from '../http/context';
import { rawBody } from '../http/body';
import { isUuid } from '../../common/validation';

/**
 * The provider's call when a task finishes (outside `/v1`), at the URL the dispatcher signed for
 * the generation and provider kind (`clients/providers/task-callback.ts`). One statement frees the
 * slot, makes the task's poll due and keeps what the callback said of the outcome for that poll;
 * its `NOTIFY provider_task_done` lets a dispatcher hand the slot on and a poll loop read the
 * outcome without asking the provider again (a callback too large to keep only says "look now").
 * A URL not ours or expired, or a Replicate or fal signature that fails
 * (`clients/providers/provider-webhooks.ts`), is `403` and changes nothing; a replay, a finished
 * generation or another task is `200` and changes nothing; a callback ahead of the submission's
 * record is kept until that record. Mounted before the body parser: signatures cover the bytes.
 */
/** A prediction's webhook carries its logs and input: larger than a client's JSON may be. */
const WEBHOOK_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

export function taskCallback(): Middleware<ApiContext['state'], ApiContext> {
  const paths = providerKinds.map((kind) => [kind, taskCallbackPath(kind)] as const);
  let webhooks: ProviderWebhooks | null = null;
  return async (ctx, next) => {
    const [kind, path] = paths.find(([, prefix]) => ctx.path.startsWith(prefix)) ?? [];
    if (kind === undefined || path === undefined) return next();
    ctx.state.route = `${path}{id}`;
    const { db, config, log } = ctx.services;
    const answer = (status: number, text: string) => {
      ctx.status = status;
      ctx.type = 'text/plain';
      ctx.body = text;
    };
    if (ctx.method !== 'POST') {
      ctx.set('Allow', 'POST');
      return answer(405, 'method not allowed');
    }
    const generationId = ctx.path.slice(path.length);
    const { expires, signature } = ctx.query;
    if (!isUuid(generationId) || typeof expires !== 'string' || typeof signature !== 'string'
      || !validTaskCallback(config.tokenSecret, generationId, expires, signature, Date.now() / 1000, kind)) {
      log.warn({ requestId: ctx.state.requestId, kind }, 'provider callback with a bad or expired signature ignored');
      return answer(403, 'bad signature');
    }
    const body = await rawBody(ctx.req, Math.max(config.jsonBodyLimitBytes, WEBHOOK_BODY_LIMIT_BYTES));
    if (body === null) return answer(413, 'too large');
    webhooks ??= webhooksOf(config);
    const verdict = await webhooks.check(kind, { headers: ctx.headers, body, generationId });
    if (verdict.kind === 'refused') {
      log.warn({ requestId: ctx.state.requestId, kind, generationId, reason: verdict.reason }, 'provider callback refused');
      return answer(403, 'bad signature');
    }
    if (!verdict.finished) return answer(200, 'OK');
    const outcome = await recordTaskCallback(db, { generationId, taskId: verdict.taskId, answer: verdict.answer });
    log.debug({ generationId, taskId: verdict.taskId, kind, outcome }, 'provider callback');
    return answer(200, 'OK');
  };
}

function webhooksOf(config: Config): ProviderWebhooks {
  const { providerApis } = config;
  const replicateAccounts = config.generations.providerAccounts.filter((account) => account.kind === ('replicate' satisfies ProviderKind));
  return providerWebhooks({
    replicateBaseUrl: providerApis.replicate.baseUrl,
    replicateWebhookSecrets: providerApis.replicate.webhookSecrets,
    falJwksUrl: providerApis.fal.jwksUrl,
    toleranceS: providerApis.webhookToleranceS,
    callTimeoutMs: providerApis.callTimeoutMs,
  }, () => replicateAccounts);
}
