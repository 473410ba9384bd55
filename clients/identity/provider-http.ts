import { IdentityProviderUnavailableError } from './errors';

/**
 * One HTTP call to an identity provider with the configured time limit (about 4 s). No answer in
 * time, a network error or a 5xx is the provider being unavailable (`IdentityProviderUnavailableError`);
 * what a 4xx means is the caller's to say.
 */
export async function callProvider(url: string, init: RequestInit, timeoutMs: number): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
  } catch {
    throw new IdentityProviderUnavailableError();
  }
  if (response.status >= 500 || response.status === 429) {
    await response.body?.cancel();
    throw new IdentityProviderUnavailableError();
  }
  return response;
}

/** The JSON body of a 2xx answer; anything unreadable is a provider failure. */
export async function jsonOf(response: Response): Promise<Record<string, unknown>> {
  try {
    const body = await response.json();
    if (body && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // fall through: a provider that answers garbage is as good as silent
  }
  throw new IdentityProviderUnavailableError();
}

export function form(fields: Record<string, string>): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(fields).toString(),
  };
}
