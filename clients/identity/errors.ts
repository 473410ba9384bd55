/**
 * How a call to an identity provider ends when it gives no profile. The API answers the first with
 * `503 provider_unavailable` and the second with `401 invalid_credentials` (`api/identity/routes.ts`).
 */

/** Not configured here, silent past its time limit, failing (5xx, 429) or answering garbage. */
export class IdentityProviderUnavailableError extends Error {
  override readonly name = 'IdentityProviderUnavailableError';
  constructor(readonly publicMessage?: string, options?: { cause?: unknown }) {
    super(publicMessage ?? 'the identity provider is unavailable', options);
  }
}

/** The provider refused what the client sent: a bad, expired or foreign token, a rejected code. */
export class IdentityRejectedError extends Error {
  override readonly name = 'IdentityRejectedError';
  constructor() {
    super('the identity provider refused the token');
  }
}
