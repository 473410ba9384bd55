import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { BodyTooLarge } from './body-too-large';
import { errors } from './errors';

/**
 * No contract body nests deeper than a few levels; code that walks a body (the Idempotency-Key
 * fingerprint, JSON.stringify) recurses, so a deeper one is refused here, before anything reads it.
 */
const maxBodyDepth = 32;

/** Whether `value` nests objects and arrays more than `max` levels deep; iterative, linear in size. */
function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length) {
    const [item, depth] = pending.pop()!;
    if (!item || typeof item !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(item)) if (child && typeof child === 'object') pending.push([child, depth + 1]);
  }
  return false;
}

/**
 * JSON and form bodies (forms: the processor's notifications and the simulators' pages).
 * Above the limit: 413 (`body-too-large.ts`); malformed or nested too deep: 422 without echoing what was sent.
 */
export function bodyParser(limitBytes: number): Middleware {
  const parse = koaBody({
    json: true,
    urlencoded: true,
    multipart: false,
    text: false,
    jsonLimit: limitBytes,
    formLimit: limitBytes,
    jsonStrict: true,
    onError: (error) => {
      if ((error as { status?: number }).status === 413) throw new BodyTooLarge(limitBytes);
      throw errors.validation([{ loc: ['body'], msg: 'body is not valid JSON', type: 'json_invalid' }]);
    },
  }) as unknown as Middleware;
  return (ctx, next) => parse(ctx, () => {
    if (nestsDeeperThan(ctx.request.body, maxBodyDepth)) {
      throw errors.validation([{ loc: ['body'], msg: `nested deeper than ${maxBodyDepth} levels`, type: 'json_too_deep' }]);
    }
    return next();
  });
}

/**
 * The body's bytes as sent, for a route that checks a signature over them (a provider's webhook):
 * null when it is larger than `limitBytes` (its reading stops there).
 */
export async function rawBody(req: AsyncIterable<Buffer>, limitBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limitBytes) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
