/**
 * The error envelope `{error: {code, message, details?}}` and every error code of the contract
 * (part A, "Errors"). Routes and domain code throw `ApiError`; the error middleware writes it.
 */

export interface ErrorDetail {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get body(): { error: { code: string; message: string; details?: ErrorDetail[] } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

export const errors = {
  authRequired: () => new ApiError(401, 'auth_required', 'Authentication required.'),
  invalidCredentials: () => new ApiError(401, 'invalid_credentials', 'Invalid credentials.'),
  insufficientCredits: () => new ApiError(402, 'insufficient_credits', 'Not enough credits.'),
  forbidden: (message = 'Forbidden.') => new ApiError(403, 'forbidden', message),
  registrationRequired: () => new ApiError(403, 'registration_required', 'This section needs a registered account.'),
  notFound: (message = 'Not found.') => new ApiError(404, 'not_found', message),
  methodNotAllowed: (allowed: string[]) =>
    new ApiError(405, 'method_not_allowed', 'Method not allowed.', undefined, { Allow: allowed.join(', ') }),
  emailTaken: () => new ApiError(409, 'email_taken', 'This email is already registered.'),
  idempotencyKeyReused: () => new ApiError(409, 'idempotency_key_reused', 'This Idempotency-Key came before with a different request.'),
  requestInProgress: () => new ApiError(409, 'request_in_progress', 'The first request with this Idempotency-Key is still being handled.'),
  payloadTooLarge: () => new ApiError(413, 'payload_too_large', 'Request body is too large.'),
  validation: (details: ErrorDetail[], message = 'Request validation failed.') => new ApiError(422, 'validation_error', message, details),
  charactersRequired: () =>
    new ApiError(422, 'characters_required', 'This effect takes several people: send photos in `characters`.'),
  rateLimited: (retryAfterS?: number) =>
    new ApiError(429, 'rate_limited', 'Too many requests.', undefined,
      retryAfterS === undefined ? {} : { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))) }),
  tooManyStreams: () => new ApiError(429, 'too_many_streams', 'Too many open streams.'),
  internal: () => new ApiError(500, 'internal_error', 'Internal server error.'),
  notImplemented: () => new ApiError(501, 'not_implemented', 'This endpoint is not implemented yet.'),
  providerUnavailable: (message = 'Provider unavailable, try again later.') => new ApiError(503, 'provider_unavailable', message),
  /**
   * The service itself cannot answer for a few seconds: its database is unreachable, or this
   * process is stopping. The contract's one 503 code, with the wait in `Retry-After`.
   */
  brieflyUnavailable: () =>
    new ApiError(503, 'provider_unavailable', 'The service is briefly unavailable, try again in a few seconds.', undefined, { 'Retry-After': String(briefOutageRetryAfterS) }),
};

/** What `Retry-After` tells a client when the database is unreachable: about a Postgres restart or failover. */
export const briefOutageRetryAfterS = 5;

/** A single-field 422, for checks that JSON Schema cannot express. */
export function invalidField(loc: (string | number)[], msg: string, type = 'value_error'): ApiError {
  return errors.validation([{ loc, msg, type }]);
}
