import type { KeyObject } from 'node:crypto';
import http2 from 'node:http2';
import { SignJWT } from 'jose';
import type { Circuit } from '../../common/circuit';
import type { Logger } from '../../common/logger';
import type { PushMessage, PushOutcome, PushSender } from './push-sender';
import { isRetryableStatus, RetryableError, retryAfterMs, withRetries, type RetryPolicy } from './retry';

/**
 * Apple Push Notification service (iOS devices), token-based authentication over HTTP/2.
 *
 * The provider token is an ES256 JWT (`kid` = key id, `iss` = team id, `iat`) signed with the .p8
 * key; Apple accepts one for an hour and refuses renewals more often than every 20 minutes, so one
 * is made every 50 minutes, and at once after `403 ExpiredProviderToken` (the send is then made
 * once more). One HTTP/2 session carries every request; a closed or failed session is replaced
 * by a new one at the next send.
 *
 * Answers: 200 sent. Dead token (the device is forgotten): 410 (`Unregistered`, `ExpiredToken`),
 * 400 `BadDeviceToken`, 400 `DeviceTokenNotForTopic`. Retried: 429 (`TooManyRequests`,
 * `TooManyProviderTokenUpdates`), 500, 503, a lost connection, a timeout. Anything else (a refused
 * key, a bad topic, a payload too large) fails the send.
 */
export interface ApnsSettings {
  keyId: string;
  teamId: string;
  topic: string;
  privateKey: KeyObject;
  environment: 'production' | 'sandbox';
}

export interface ApnsSenderOptions extends ApnsSettings {
  retry: RetryPolicy;
  circuit: Circuit;
  timeoutMs: number;
  log: Logger;
  /** Tests: another origin (a local HTTP/2 server) and the certificate authority it is signed by. */
  origin?: string;
  ca?: string | Buffer;
}

const origins = { production: 'https://api.push.apple.com', sandbox: 'https://api.sandbox.push.apple.com' } as const;
const providerTokenLifetimeMs = 50 * 60_000;
/** A session idle this long is closed (Apple closes idle connections anyway). */
const sessionIdleMs = 10 * 60_000;

const deadTokenReasons = new Set(['BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered', 'ExpiredToken']);

interface ApnsAnswer {
  status: number;
  reason: string;
  retryAfter: string | undefined;
}

export class ApnsSender implements PushSender {
  readonly name = 'apns';
  private readonly origin: string;
  private session: http2.ClientHttp2Session | null = null;
  private providerToken: { jwt: Promise<string>; madeAt: number } | null = null;

  constructor(private readonly options: ApnsSenderOptions) {
    this.origin = options.origin ?? origins[options.environment];
  }

  send(message: PushMessage): Promise<PushOutcome> {
    return withRetries(this.options.retry, this.options.circuit, async () => {
      let answer = await this.request(message, await this.currentToken());
      if (answer.status === 403 && answer.reason === 'ExpiredProviderToken') {
        this.providerToken = null;
        answer = await this.request(message, await this.currentToken());
      }
      return this.outcomeOf(answer);
    });
  }

  /** Closes the HTTP/2 session (a new send would open another). */
  async close(): Promise<void> {
    const session = this.session;
    this.session = null;
    if (session && !session.closed) await new Promise<void>((resolve) => session.close(() => resolve()));
  }

  private currentToken(): Promise<string> {
    if (!this.providerToken || Date.now() - this.providerToken.madeAt >= providerTokenLifetimeMs) {
      const jwt = new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: this.options.keyId })
        .setIssuer(this.options.teamId)
        .setIssuedAt()
        .sign(this.options.privateKey);
      this.providerToken = { jwt, madeAt: Date.now() };
      jwt.catch(() => {
        if (this.providerToken?.jwt === jwt) this.providerToken = null;
      });
    }
    return this.providerToken.jwt;
  }

  private connect(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = http2.connect(this.origin, this.options.ca ? { ca: this.options.ca } : {});
    const forget = () => {
      if (this.session === session) this.session = null;
    };
    // A failed connection fails its streams too (each send sees that, and APNs's circuit counts it,
    // warning once when it opens); the session is just dropped.
    session.on('error', (error) => {
      this.options.log.info({ err: error }, 'APNs connection failed');
      forget();
    });
    session.on('goaway', forget);
    session.on('close', forget);
    session.setTimeout(sessionIdleMs, () => session.close());
    // An open push connection alone never keeps the process from exiting.
    session.unref();
    this.session = session;
    return session;
  }

  private request(message: PushMessage, jwt: string): Promise<ApnsAnswer> {
    const body = JSON.stringify({ ...message.data, aps: { alert: { title: message.title, body: message.body }, sound: 'default' } });
    return new Promise<ApnsAnswer>((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.connect().request({
          ':method': 'POST',
          ':path': `/3/device/${encodeURIComponent(message.token)}`,
          'apns-topic': this.options.topic,
          'apns-push-type': 'alert',
          'apns-priority': '10',
          authorization: `bearer ${jwt}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        });
      } catch (error) {
        this.session = null;
        reject(new RetryableError(`APNs request failed: ${(error as Error).message}`));
        return;
      }
      let status = 0;
      let retryAfter: string | undefined;
      const chunks: Buffer[] = [];
      stream.setTimeout(this.options.timeoutMs, () => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(new RetryableError(`APNs gave no answer within ${this.options.timeoutMs} ms`));
      });
      stream.on('response', (headers) => {
        status = Number(headers[':status']);
        retryAfter = headers['retry-after'] as string | undefined;
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        let reason = '';
        try {
          reason = chunks.length ? String(JSON.parse(Buffer.concat(chunks).toString('utf8')).reason ?? '') : '';
        } catch {
          // no JSON body: the status alone says it
        }
        resolve({ status, reason, retryAfter });
      });
      stream.on('error', (error) => reject(new RetryableError(`APNs stream failed: ${error.message}`)));
      stream.on('close', () => {
        if (!status) reject(new RetryableError(`APNs stream closed without an answer (code ${stream.rstCode})`));
      });
      stream.end(body);
    });
  }

  private outcomeOf(answer: ApnsAnswer): PushOutcome {
    if (answer.status === 200) return 'sent';
    if (answer.status === 410 || deadTokenReasons.has(answer.reason)) return 'invalid_token';
    if (isRetryableStatus(answer.status) || answer.reason === 'TooManyProviderTokenUpdates') {
      throw new RetryableError(`APNs answered ${answer.status} ${answer.reason}`, retryAfterMs(answer.retryAfter));
    }
    this.options.log.warn({ status: answer.status, reason: answer.reason }, 'APNs refused a message');
    throw new Error(`APNs refused the message: ${answer.status} ${answer.reason}`);
  }
}
