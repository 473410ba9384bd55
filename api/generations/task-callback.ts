import type { Middleware } from 'koa';
import { recordTaskCallback } from '../../db/generations/record-task-callback';
import { TASK_CALLBACK_PATH, validTaskCallback } from '../../clients/providers/task-callback';
import type { ApiContext } from '../http/context';
import { isUuid } from '../../common/validation';

/**
 * The provider's call when a task finishes (outside `/v1`: not part of the client API), at the URL
 * the dispatcher signed for the generation (`pool/provider/task-callback.ts`). It frees the slot at
 * once (the provider's work is over) and makes the task's poll due, in one statement whose
 * `NOTIFY provider_task_done` wakes every worker: a dispatcher hands the slot on, a poll loop reads
 * the outcome from the provider (the truth, as for payments: the callback only says "look now").
 *
 * A URL that is not ours, or expired, is `403` and changes nothing; a replay, a finished generation
 * or another task of it is `200` and changes nothing; a callback faster than the record of the
 * submission is `200` too, kept until that record makes the first poll due at once. Polling covers
 * any callback that never comes.
 */
export function taskCallback(): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(TASK_CALLBACK_PATH)) return next();
    ctx.state.route = `${TASK_CALLBACK_PATH}{id}`;
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
    const generationId = ctx.path.slice(TASK_CALLBACK_PATH.length);
    const { expires, signature } = ctx.query;
    if (!isUuid(generationId) || typeof expires !== 'string' || typeof signature !== 'string'
      || !validTaskCallback(config.tokenSecret, generationId, expires, signature)) {
      log.warn({ requestId: ctx.state.requestId }, 'provider callback with a bad or expired signature ignored');
      return answer(403, 'bad signature');
    }
    const task = ctx.request.body as { id?: unknown; status?: unknown } | undefined;
    if (typeof task?.id !== 'string' || !['succeeded', 'failed'].includes(String(task.status))) return answer(200, 'OK');
    const taskId = task.id;
    const outcome = await recordTaskCallback(db, { generationId, taskId });
    log.debug({ generationId, taskId, outcome }, 'provider callback');
    return answer(200, 'OK');
  };
}
