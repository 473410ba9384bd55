import type { Config } from '../../config';
import { CircuitOpenError, type Circuits } from '../../common/circuit';
import { IdentityProviderUnavailableError } from './errors';
import type { Provider } from './profile';

/**
 * Calls to identity providers, each through the circuit of its provider and origin, one of the
 * process's own (`Services.circuits`, in memory): a sign-in is a short call (IDP_TIMEOUT_MS, about
 * 4 s) made by every web process, so each process learns an outage from its own few failed
 * sign-ins and warns once, and no sign-in pays a database read for the circuit; the worker's
 * revocations are retried by pg-boss whatever the circuit says. An open circuit answers like a
 * silent provider (`IdentityProviderUnavailableError`: `503 provider_unavailable`), at once.
 */
export interface IdentityContext {
  config: Config;
  circuits: Circuits;
}

/** `call` through the circuit of `provider` at `url`'s origin; only `IdentityProviderUnavailableError` counts against it. */
export async function throughCircuit<T>(context: IdentityContext, provider: Provider, url: string, call: () => Promise<T>): Promise<T> {
  const circuit = context.circuits.of(`identity provider ${provider} ${new URL(url).origin}`, context.config.idp.timeoutMs + 1000);
  try {
    return await circuit.run(call, (error) => error instanceof IdentityProviderUnavailableError);
  } catch (error) {
    if (error instanceof CircuitOpenError) throw new IdentityProviderUnavailableError(undefined, { cause: error });
    throw error;
  }
}

/**
 * One HTTP call to an identity provider with the configured time limit. No answer in time, a
 * network error or a 5xx is the provider being unavailable (`IdentityProviderUnavailableError`);
 * what a 4xx means is the caller's to say.
 */
export function callProvider(context: IdentityContext, provider: Provider, url: string, init: RequestInit): Promise<Response> {
  return throughCircuit(context, provider, url, async () => {
    let response: Response;
    try {
      response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(context.config.idp.timeoutMs) });
    } catch {
      throw new IdentityProviderUnavailableError();
    }
    if (response.status >= 500 || response.status === 429) {
      await response.body?.cancel();
      throw new IdentityProviderUnavailableError();
    }
    return response;
  });
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
