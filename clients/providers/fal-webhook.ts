import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { KeptRead } from './kept-read';
import { callProvider, field, isNoAnswer } from './provider-call';
import { isSuccess } from '../outbound-http';

/**
 * fal signs its webhooks with ED25519 (its documentation, "Verifying your webhook"): the signature
 * (hex, `x-fal-webhook-signature`) covers four lines, `x-fal-webhook-request-id`,
 * `x-fal-webhook-user-id`, `x-fal-webhook-timestamp` and the hex SHA-256 of the body, and is made by
 * one of the keys of fal's JWKS (`x`: the raw public key, base64url). The timestamp must be within
 * `toleranceS` of now. A replay inside it changes nothing (the callback is recorded once per
 * generation); request ids seen are not kept.
 */
export interface FalWebhookHeaders {
  requestId: string | undefined;
  userId: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

export type FalWebhookCheck = 'valid' | 'unsigned' | 'expired' | 'forged';

export function falSignedMessage(requestId: string, userId: string, timestamp: string, body: Buffer | string): Buffer {
  return Buffer.from([requestId, userId, timestamp, createHash('sha256').update(body).digest('hex')].join('\n'));
}

export function checkFalWebhook(headers: FalWebhookHeaders, body: Buffer, keys: readonly KeyObject[], toleranceS: number, nowS = Date.now() / 1000): FalWebhookCheck {
  const { requestId, userId, timestamp, signature } = headers;
  if (!requestId || !userId || !timestamp || !signature) return 'unsigned';
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowS - Number(timestamp)) > toleranceS) return 'expired';
  if (!/^[0-9a-f]{128}$/i.test(signature)) return 'forged';
  const message = falSignedMessage(requestId, userId, timestamp, body);
  const bytes = Buffer.from(signature, 'hex');
  return keys.some((key) => verify(null, message, key, bytes)) ? 'valid' : 'forged';
}

export interface FalWebhookKeysOptions {
  jwksUrl: string;
  timeoutMs: number;
  /** How long a read key set is trusted (fal's documentation: cache it at most a day). */
  ttlMs?: number;
  /** A signature none of the kept keys made reads them again (a new key), at most this often. */
  refreshMinMs?: number;
}

/** fal's webhook keys, read from its JWKS and kept a day. */
export class FalWebhookKeys {
  private readonly kept: KeptRead<KeyObject[]>;

  constructor(private readonly options: FalWebhookKeysOptions) {
    this.kept = new KeptRead((earlier) => this.readSet(earlier), { ttlMs: options.ttlMs ?? 24 * 3600_000, refreshMinMs: options.refreshMinMs ?? 60_000 });
  }

  current(): Promise<KeyObject[]> {
    return this.kept.current();
  }

  /** After a `forged` check: the keys read again, or null when they were read too recently to ask again. */
  refreshed(): Promise<KeyObject[] | null> {
    return this.kept.refreshed();
  }

  /** A JWKS that cannot be read leaves the keys kept before (or none): every webhook then waits for polling. */
  private async readSet(earlier: KeyObject[] | null): Promise<KeyObject[]> {
    const answer = await callProvider(this.options.jwksUrl, { method: 'GET', headers: {}, timeoutMs: this.options.timeoutMs, maxBytes: 256 * 1024 });
    const listed = !isNoAnswer(answer) && isSuccess(answer.status) ? field(answer.body, 'keys') : null;
    if (!Array.isArray(listed)) return earlier ?? [];
    return listed.flatMap((jwk: unknown) => {
      const x = field(jwk, 'x');
      if (field(jwk, 'kty') !== 'OKP' || field(jwk, 'crv') !== 'Ed25519' || typeof x !== 'string') return [];
      try {
        return [createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' })];
      } catch {
        return [];
      }
    });
  }
}
