import { quantity } from '../../common/plural';

/**
 * The error envelope `{error: {code, message, details?}}` and every error code of the API, with its
 * HTTP status and default message: routes and domain code throw `ApiError`, the error middleware
 * writes it, and `/v1/openapi.json` documents each route's codes from this one table.
 */

export interface ErrorDetail {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export const errorCodes = {
  bad_request: { status: 400, message: 'The HTTP request is malformed.' },
  auth_required: { status: 401, message: 'Authentication required.' },
  invalid_credentials: { status: 401, message: 'Invalid credentials.' },
  insufficient_credits: { status: 402, message: 'Not enough credits.' },
  forbidden: { status: 403, message: 'Forbidden.' },
  registration_required: { status: 403, message: 'This section needs a registered account.' },
  not_found: { status: 404, message: 'Not found.' },
  method_not_allowed: { status: 405, message: 'Method not allowed.' },
  email_taken: { status: 409, message: 'This email is already registered.' },
  already_subscribed: { status: 409, message: 'A subscription to this plan exists.' },
  idempotency_key_reused: { status: 409, message: 'This Idempotency-Key came before with a different request.' },
  request_in_progress: { status: 409, message: 'The first request with this Idempotency-Key is still being handled.' },
  request_timeout: { status: 408, message: 'The request did not arrive in time.' },
  payload_too_large: { status: 413, message: 'Request body is too large.' },
  unsupported_media_type: { status: 415, message: 'Unsupported media type.' },
  headers_too_large: { status: 431, message: 'Request headers are too large.' },
  validation_error: { status: 422, message: 'Request validation failed.' },
  characters_required: { status: 422, message: 'This effect takes several people: send photos in `characters`.' },
  rate_limited: { status: 429, message: 'Too many requests.' },
  too_many_streams: { status: 429, message: 'Too many open streams.' },
  internal_error: { status: 500, message: 'Internal server error.' },
  not_implemented: { status: 501, message: 'This endpoint is not implemented yet.' },
  provider_unavailable: { status: 503, message: 'Provider unavailable, try again later.' },
} as const;

export type ErrorCode = keyof typeof errorCodes;

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string = errorCodes[code].message,
    readonly details?: ErrorDetail[],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = errorCodes[code].status;
  }

  get body(): { error: { code: string; message: string; details?: ErrorDetail[] } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

export const errors = {
  badRequest: () => new ApiError('bad_request'),
  authRequired: () => new ApiError('auth_required'),
  invalidCredentials: () => new ApiError('invalid_credentials'),
  /** The message quotes the ledger's figures, read under the user's lock where the debit failed. */
  insufficientCredits: (shortfall: { amount: number; balance: number }) =>
    new ApiError('insufficient_credits', `This costs ${quantity(shortfall.amount, 'credit')}; your balance is ${shortfall.balance}.`),
  forbidden: (message?: string) => new ApiError('forbidden', message),
  registrationRequired: () => new ApiError('registration_required'),
  notFound: (message?: string) => new ApiError('not_found', message),
  methodNotAllowed: (allowed: string[]) => new ApiError('method_not_allowed', undefined, undefined, { Allow: allowed.join(', ') }),
  emailTaken: () => new ApiError('email_taken'),
  alreadySubscribed: () => new ApiError('already_subscribed'),
  idempotencyKeyReused: () => new ApiError('idempotency_key_reused'),
  requestInProgress: () => new ApiError('request_in_progress'),
  requestTimeout: () => new ApiError('request_timeout'),
  payloadTooLarge: (message?: string) => new ApiError('payload_too_large', message),
  unsupportedMediaType: (message?: string) => new ApiError('unsupported_media_type', message),
  headersTooLarge: () => new ApiError('headers_too_large'),
  validation: (details: ErrorDetail[], message?: string) => unprocessable('validation_error', details, message),
  // A 422 always names the field in `details`: here the photos must come as `characters`.
  charactersRequired: () => unprocessable('characters_required',
    [{ loc: ['body', 'characters'], msg: 'this effect takes several people: send the photos of each in characters', type: 'characters_required' }]),
  rateLimited: (retryAfterS?: number) =>
    new ApiError('rate_limited', undefined, undefined,
      retryAfterS === undefined ? {} : { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))) }),
  tooManyStreams: () => new ApiError('too_many_streams'),
  internal: () => new ApiError('internal_error'),
  notImplemented: () => new ApiError('not_implemented'),
  providerUnavailable: (message?: string) => new ApiError('provider_unavailable', message),
  /**
   * The service itself cannot answer for a few seconds: its database is unreachable, or this
   * process is stopping. The contract's one 503 code, with the wait in `Retry-After`.
   */
  brieflyUnavailable: () => new ApiError('provider_unavailable', 'The service is briefly unavailable, try again in a few seconds.', undefined,
    { 'Retry-After': String(briefOutageRetryAfterS) }),
};

/** What `Retry-After` tells a client when the database is unreachable: about a Postgres restart or failover. */
export const briefOutageRetryAfterS = 5;

/**
 * A 422 names at most a few problems per field and a few in all, so its size does not grow with
 * the request's (120,000 bad items would otherwise answer 120,000 details); the message says how
 * many were left out.
 */
const detailsPerField = 3;
const detailsInAll = 20;

function unprocessable(code: 'validation_error' | 'characters_required', details: ErrorDetail[], message: string = errorCodes[code].message): ApiError {
  const perField = new Map<string, number>();
  const kept = details.filter((detail) => {
    const field = detail.loc.filter((part) => typeof part === 'string').join('.');
    const count = (perField.get(field) ?? 0) + 1;
    perField.set(field, count);
    return count <= detailsPerField;
  }).slice(0, detailsInAll);
  const omitted = details.length - kept.length;
  const note = omitted ? ` ${quantity(omitted, 'more problem')} not listed.` : '';
  return new ApiError(code, message + note, kept);
}

/** A single-field 422, for checks that JSON Schema cannot express. */
export function invalidField(loc: (string | number)[], msg: string, type = 'value_error'): ApiError {
  return errors.validation([{ loc, msg, type }]);
}

/**
 * A move refused because of the object's status (publish, unpublish, cancel):
 * `422 validation_error` with one detail on the path's id.
 */
export function invalidStatus(msg: string): ApiError {
  return invalidField(['path', 'id'], msg, 'invalid_status');
}
