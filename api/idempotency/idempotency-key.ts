import type { ApiContext } from '../http/context';
import { invalidField, type ErrorCode } from '../http/errors';
import { schema, type JsonSchema } from '../../common/validation';

/**
 * `Idempotency-Key` (the contract: idempotent retries), the HTTP side: which endpoints take it,
 * its format, and reading it. A route declared `idempotent: '<pair>'` gets the key checked once by
 * the router (`api/http/router.ts`) and documented in `/v1/openapi.json`; its handler receives it
 * with its pair and endpoint and hands it to `createOnce` (`api/idempotency/create-once.ts`).
 *
 * Keys are per user and per pair: the endpoints of one pair share one key space (a key used on one
 * is `409 idempotency_key_reused` on the other), keys of different pairs never collide.
 */
export type KeyPair = 'generation' | 'payment';

/**
 * The conflicts an endpoint of each pair may answer: a key that came with another request; for
 * payments (created in two phases around the processor's answer) also the first request still
 * waiting for it.
 */
export const pairConflicts: Record<KeyPair, ErrorCode[]> = {
  generation: ['idempotency_key_reused'],
  payment: ['idempotency_key_reused', 'request_in_progress'],
};

/** A key sent with a request to an idempotent route. */
export interface IdempotencyKey {
  key: string;
  pair: KeyPair;
  /** The endpoint inside the pair, e.g. `POST /v1/generations`. */
  endpoint: string;
}

const keyLength = { min: 16, max: 64 };
const keyCharacters = 'A-Za-z0-9_-';
const keyFormat = new RegExp(`^[${keyCharacters}]{${keyLength.min},${keyLength.max}}$`);

/** The header as `/v1/openapi.json` documents it on idempotent routes. */
export const idempotencyKeyParameter: { name: string; in: 'header'; required: false; description: string; schema: JsonSchema } = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Makes a retry safe: the same key with the same body returns the object the first request created, with its status code and current state; with another body it is `409 idempotency_key_reused`. Generate a fresh random key per new object and keep it for its retries.',
  schema: schema.string({ minLength: keyLength.min, maxLength: keyLength.max, pattern: `^[${keyCharacters}]+$` }),
};

/** The request's key, or null without the header; a malformed key is a 422. */
export function idempotencyKeyOf(ctx: ApiContext, pair: KeyPair, endpoint: string): IdempotencyKey | null {
  const key = ctx.get('Idempotency-Key');
  if (!key) return null;
  if (!keyFormat.test(key)) {
    throw invalidField(['header', 'Idempotency-Key'], `must be ${keyLength.min}..${keyLength.max} characters from A-Z a-z 0-9 _ -`, 'pattern');
  }
  return { key, pair, endpoint };
}
