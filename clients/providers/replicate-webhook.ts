import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ProviderAccount } from './adapter';
import { KeptRead } from './kept-read';
import { callProvider, field, isNoAnswer, text } from './provider-call';
import { isSuccess } from '../outbound-http';

/**
 * Replicate signs its webhooks as Standard Webhooks do (its JS client's `validateWebhook`):
 * `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` of `{webhook-id}.{webhook-timestamp}.{body}`,
 * keyed with the base64 after `whsec_` of the account's signing secret (`GET /webhooks/default/secret`).
 * The timestamp must be within `toleranceS` of now: a captured webhook replays only that long, and a
 * replay inside it changes nothing (the callback is recorded once per generation). Seen
 * `webhook-id`s are not kept: the recording is idempotent instead.
 */
export interface StandardWebhookHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** `unsigned`: a header is missing; `expired`: signed too long ago (or ahead); `forged`: no secret made that signature. */
export type WebhookCheck = 'valid' | 'unsigned' | 'expired' | 'forged';

export function checkStandardWebhook(headers: StandardWebhookHeaders, body: Buffer, secrets: readonly string[], toleranceS: number, nowS = Date.now() / 1000): WebhookCheck {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature) return 'unsigned';
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowS - Number(timestamp)) > toleranceS) return 'expired';
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
  const given = signature.split(' ').flatMap((entry) => {
    const [version, value] = entry.split(',');
    return version === 'v1' && value ? [Buffer.from(value, 'base64')] : [];
  });
  for (const secret of secrets) {
    const expected = createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64')).update(signed).digest();
    if (given.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected))) return 'valid';
  }
  return 'forged';
}

/** The signature of a webhook body, as Replicate (and the simulator) sends it. */
export function standardWebhookSignature(secret: string, id: string, timestamp: string, body: string | Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

export interface ReplicateWebhookSecretsOptions {
  /** REPLICATE_WEBHOOK_SECRETS: when given, the only secrets, and none is read from the API. */
  configured: readonly string[];
  baseUrl: string;
  /** The Replicate accounts of this process: each one's default secret is read once. */
  accounts: () => readonly ProviderAccount[];
  timeoutMs: number;
  /** A signature none of the kept secrets made reads them again (a rotated secret), at most this often. */
  refreshMinMs?: number;
}

/** The signing secrets webhooks are checked against, read from `GET /webhooks/default/secret` per account and kept. */
export class ReplicateWebhookSecrets {
  private readonly kept: KeptRead<string[]>;

  constructor(private readonly options: ReplicateWebhookSecretsOptions) {
    this.kept = new KeptRead((earlier) => this.readAll(earlier ?? []), { ttlMs: Infinity, refreshMinMs: options.refreshMinMs ?? 60_000 });
  }

  /** The secrets known now (read on first use). */
  current(): Promise<string[]> {
    return this.options.configured.length ? Promise.resolve([...this.options.configured]) : this.kept.current();
  }

  /** After a `forged` check: the secrets read again, or null when they were read too recently to ask again. */
  refreshed(): Promise<string[] | null> {
    return this.options.configured.length ? Promise.resolve(null) : this.kept.refreshed();
  }

  /** An account that does not answer keeps its earlier secret, if any; the rest are read again. */
  private async readAll(earlier: string[]): Promise<string[]> {
    const secrets = await Promise.all(this.options.accounts().map(async (account) => {
      const answer = await callProvider(`${this.options.baseUrl.replace(/\/+$/, '')}/webhooks/default/secret`, {
        method: 'GET',
        headers: { authorization: `Bearer ${account.apiKey}` },
        timeoutMs: this.options.timeoutMs,
        maxBytes: 64 * 1024,
      });
      if (isNoAnswer(answer) || !isSuccess(answer.status)) return null;
      const key = text(field(answer.body, 'key'));
      return key !== null && key.startsWith('whsec_') ? key : null;
    }));
    return [...new Set([...secrets.filter((secret): secret is string => secret !== null), ...earlier])];
  }
}
