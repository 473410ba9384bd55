import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { errors } from './errors';

/**
 * JSON and form bodies (forms: the processor's notifications and the simulators' pages).
 * Above the limit: 413; malformed: 422 without echoing what was sent.
 */
export function bodyParser(limitBytes: number): Middleware {
  return koaBody({
    json: true,
    urlencoded: true,
    multipart: false,
    text: false,
    jsonLimit: limitBytes,
    formLimit: limitBytes,
    jsonStrict: true,
    onError: (error) => {
      if ((error as { status?: number }).status === 413) throw errors.payloadTooLarge();
      throw errors.validation([{ loc: ['body'], msg: 'body is not valid JSON', type: 'json_invalid' }]);
    },
  }) as unknown as Middleware;
}
