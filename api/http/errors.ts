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
  badRequest: () => new ApiError(400, 'bad_request', 'The HTTP request is malformed.'),
  authRequired: () => new ApiError(401, 'auth_required', 'Authentication required.'),
  invalidCredentials: () => new ApiError(401, 'invalid_credentials', 'Invalid credentials.'),
  insufficientCredits: () => new ApiError(402, 'insufficient_credits', 'Not enough credits.'),
  forbidden: (message = 'Forbidden.') => new ApiError(403, 'forbidden', message),
  registrationRequired: () => new ApiError(403, 'registration_required', 'This section needs a registered account.'),
  notFound: (message = 'Not found.') => new ApiError(404, 'not_found', message),
  methodNotAllowed: (allowed: string[]) =>
    new ApiError(405, 'method_not_allowed', 'Method not allowed.', undefined, { Allow: allowed.join(', ') }),
  emailTaken: () => new ApiError(409, 'email_taken', 'This email is already registered.'),
  alreadySubscribed: () => new ApiError(409, 'already_subscribed', 'A subscription to this plan exists.'),
  idempotencyKeyReused: () => new ApiError(409, 'idempotency_key_reused', 'This Idempotency-Key came before with a different request.'),
  requestInProgress: () => new ApiError(409, 'request_in_progress', 'The first request with this Idempotency-Key is still being handled.'),
  requestTimeout: () => new ApiError(408, 'request_timeout', 'The request did not arrive in time.'),
  payloadTooLarge: (message = 'Request body is too large.') => new ApiError(413, 'payload_too_large', message),
  unsupportedMediaType: (message = 'Unsupported media type.') => new ApiError(415, 'unsupported_media_type', message),
  headersTooLarge: () => new ApiError(431, 'headers_too_large', 'Request headers are too large.'),
  validation: (details: ErrorDetail[], message = 'Request validation failed.') => unprocessable('validation_error', message, details),
  charactersRequired: () => unprocessable('characters_required', 'This effect takes several people: send photos in `characters`.', [
    { loc: ['body', 'characters'], msg: 'this effect takes several people: send the photos of each in characters', type: 'characters_required' },
  ]),
  rateLimited: (retryAfterS?: number) =>
    new ApiError(429, 'rate_limited', 'Too many requests.', undefined,
      retryAfterS === undefined ? {} : { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))) }),
  tooManyStreams: () => new ApiError(429, 'too_many_streams', 'Too many open streams.'),
  internal: () => new ApiError(500, 'internal_error', 'Internal server error.'),
  notImplemented: () => new ApiError(501, 'not_implemented', 'This endpoint is not implemented yet.'),
  providerUnavailable: (message = 'Provider unavailable, try again later.') => new ApiError(503, 'provider_unavailable', message),
};

/**
 * A 422 names at most a few problems per field and a few in all, so its size does not grow with
 * the request's (120,000 bad items would otherwise answer 120,000 details); the message says how
 * many were left out.
 */
const detailsPerField = 3;
const detailsInAll = 20;

function unprocessable(code: string, message: string, details: ErrorDetail[]): ApiError {
  const perField = new Map<string, number>();
  const kept = details.filter((detail) => {
    const field = detail.loc.filter((part) => typeof part === 'string').join('.');
    const count = (perField.get(field) ?? 0) + 1;
    perField.set(field, count);
    return count <= detailsPerField;
  }).slice(0, detailsInAll);
  const omitted = details.length - kept.length;
  const note = omitted ? ` ${omitted} more problem${omitted === 1 ? '' : 's'} not listed.` : '';
  return new ApiError(422, code, message + note, kept);
}

/** A single-field 422, for checks that JSON Schema cannot express. */
export function invalidField(loc: (string | number)[], msg: string, type = 'value_error'): ApiError {
  return errors.validation([{ loc, msg, type }]);
}

/**
 * A move refused because of the object's status (decisions.md 7.6: publish, unpublish, cancel):
 * `422 validation_error` with one detail on the path's id.
 */
export function invalidStatus(msg: string): ApiError {
  return invalidField(['path', 'id'], msg, 'invalid_status');
}
