import type { KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Circuit } from '../../common/circuit';
import type { Logger } from '../../common/logger';
import type { PushMessage, PushOutcome, PushSender } from './push-sender';
import { isRetryableStatus, RetryableError, retryAfterMs, withRetries, type RetryPolicy } from './retry';

/**
 * Firebase Cloud Messaging, HTTP v1 API (Android devices).
 *
 * Authentication: a JWT signed (RS256) with the service account's key, exchanged at the account's
 * token URI for an OAuth access token, which is kept until a minute before it expires and shared by
 * concurrent sends. A 401 from FCM drops it and the send is made once more with a fresh one.
 *
 * Answers: 200 sent. Dead token (the device is forgotten): `UNREGISTERED` (404 `NOT_FOUND`),
 * `INVALID_ARGUMENT` (400) about the token (FCM's own `FcmError` detail, or a field violation on
 * `message.token`), `SENDER_ID_MISMATCH` (403: the token belongs to another Firebase project).
 * Retried: 429 `QUOTA_EXCEEDED`, 500 `INTERNAL`, 503 `UNAVAILABLE`, network errors and timeouts.
 * Anything else (a 400 about another field: the message itself is wrong) fails the send.
 */
export interface FcmSettings {
  projectId: string;
  clientEmail: string;
  privateKey: KeyObject;
  tokenUri: string;
}

export interface FcmSenderOptions extends FcmSettings {
  retry: RetryPolicy;
  /** FCM's circuit: the token exchange and the send alike. */
  circuit: Circuit;
  timeoutMs: number;
  log: Logger;
  /** The FCM API origin; tests may point it elsewhere. */
  endpoint?: string;
}

const scope = 'https://www.googleapis.com/auth/firebase.messaging';
const defaultEndpoint = 'https://fcm.googleapis.com';
const tokenRefreshMarginMs = 60_000;

interface GoogleError {
  error?: {
    code?: number;
    status?: string;
    message?: string;
    details?: { '@type'?: string; errorCode?: string; fieldViolations?: { field?: string }[] }[];
  };
}

/** OAuth access tokens of one service account, cached until shortly before they expire. */
class GoogleAccessTokens {
  private cached: { token: string; expiresAt: number } | null = null;
  private pending: Promise<string> | null = null;

  constructor(private readonly settings: FcmSettings, private readonly timeoutMs: number) {}

  get(): Promise<string> {
    if (this.cached && Date.now() < this.cached.expiresAt - tokenRefreshMarginMs) return Promise.resolve(this.cached.token);
    this.pending ??= this.exchange().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  /** FCM refused this token (401): the next `get` fetches another. */
  drop(token: string): void {
    if (this.cached?.token === token) this.cached = null;
  }

  private async exchange(): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ scope })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setIssuer(this.settings.clientEmail)
      .setSubject(this.settings.clientEmail)
      .setAudience(this.settings.tokenUri)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(this.settings.privateKey);
    const response = await fetchOrRetry(this.settings.tokenUri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
    }, this.timeoutMs, 'FCM token exchange');
    const answer = await response.json().catch(() => ({})) as { access_token?: string; expires_in?: number; error?: string };
    if (isRetryableStatus(response.status)) {
      throw new RetryableError(`FCM token exchange answered ${response.status}`, retryAfterMs(response.headers.get('retry-after')));
    }
    if (!response.ok || !answer.access_token) {
      throw new Error(`FCM token exchange refused: ${response.status} ${answer.error ?? ''}`.trim());
    }
    this.cached = { token: answer.access_token, expiresAt: Date.now() + (answer.expires_in ?? 3600) * 1000 };
    return answer.access_token;
  }
}

export class FcmSender implements PushSender {
  readonly name = 'fcm';
  private readonly tokens: GoogleAccessTokens;
  private readonly url: string;

  constructor(private readonly options: FcmSenderOptions) {
    this.tokens = new GoogleAccessTokens(options, options.timeoutMs);
    this.url = `${options.endpoint ?? defaultEndpoint}/v1/projects/${encodeURIComponent(options.projectId)}/messages:send`;
  }

  send(message: PushMessage): Promise<PushOutcome> {
    return withRetries(this.options.retry, this.options.circuit, async () => {
      let accessToken = await this.tokens.get();
      let response = await this.post(accessToken, message);
      if (response.status === 401) {
        await response.body?.cancel();
        this.tokens.drop(accessToken);
        accessToken = await this.tokens.get();
        response = await this.post(accessToken, message);
      }
      return this.outcomeOf(response);
    });
  }

  private post(accessToken: string, message: PushMessage): Promise<Response> {
    return fetchOrRetry(this.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { token: message.token, notification: { title: message.title, body: message.body }, data: message.data },
      }),
    }, this.options.timeoutMs, 'FCM send');
  }

  private async outcomeOf(response: Response): Promise<PushOutcome> {
    if (response.ok) {
      await response.body?.cancel();
      return 'sent';
    }
    const answer = (await response.json().catch(() => ({}))) as GoogleError;
    const details = answer.error?.details ?? [];
    const fcmCode = details.find((detail) => detail['@type']?.endsWith('google.firebase.fcm.v1.FcmError'))?.errorCode;
    const code = fcmCode ?? answer.error?.status ?? '';
    if (isRetryableStatus(response.status)) {
      throw new RetryableError(`FCM answered ${response.status} ${code}`, retryAfterMs(response.headers.get('retry-after')));
    }
    if (code === 'UNREGISTERED' || response.status === 404 || code === 'SENDER_ID_MISMATCH') return 'invalid_token';
    if (code === 'INVALID_ARGUMENT') {
      const fields = details.flatMap((detail) => detail.fieldViolations ?? []).map((violation) => violation.field);
      if (fields.length === 0 || fields.every((field) => field === 'message.token')) return 'invalid_token';
    }
    this.options.log.warn({ status: response.status, code, message: answer.error?.message }, 'FCM refused a message');
    throw new Error(`FCM refused the message: ${response.status} ${code}`);
  }
}

/** `fetch` with a timeout, where a network failure or a timeout is retryable. */
async function fetchOrRetry(url: string, init: RequestInit, timeoutMs: number, what: string): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new RetryableError(`${what} failed: ${(error as Error).message}`);
  }
}
