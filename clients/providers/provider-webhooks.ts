import type { IncomingHttpHeaders } from 'node:http';
import type { KeyObject } from 'node:crypto';
import type { ProviderKind } from '../../common/model-route';
import type { ProviderAccount } from './adapter';
import { falWebhookOutcome } from './fal';
import { checkFalWebhook, FalWebhookKeys } from './fal-webhook';
import { field, parseJson, text } from './provider-call';
import { predictionOutcome } from './replicate';
import { checkStandardWebhook, ReplicateWebhookSecrets } from './replicate-webhook';
import { generationOfCallbackUrl } from './task-callback';

/**
 * What a provider's call to our signed callback URL says, once the provider's own signature is
 * checked (the URL's is checked before): the task it names and whether it is finished, mapped as a
 * poll of the same task would be (`predictionOutcome`, `falWebhookOutcome`). The recording only
 * needs "this task is finished, look now"; the poll stays the truth about its outcome.
 */
export type WebhookVerdict =
  | { kind: 'refused'; reason: string }
  | { kind: 'task'; taskId: string; finished: boolean };

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The generation our URL names (its signature already checked). */
  generationId: string;
}

export interface ProviderWebhooksOptions {
  replicateSecrets: Pick<ReplicateWebhookSecrets, 'current' | 'refreshed'>;
  falKeys: Pick<FalWebhookKeys, 'current' | 'refreshed'>;
  toleranceS: number;
}

export class ProviderWebhooks {
  constructor(private readonly options: ProviderWebhooksOptions) {}

  check(kind: ProviderKind, webhook: ReceivedWebhook): Promise<WebhookVerdict> {
    if (kind === 'replicate') return this.replicate(webhook);
    if (kind === 'fal') return this.fal(webhook);
    return Promise.resolve(simulatorTask(webhook.body));
  }

  /**
   * A prediction, Standard-Webhooks signed. It shows the webhook it was created with: another
   * generation's is a webhook moved here, refused.
   */
  private async replicate({ headers, body, generationId }: ReceivedWebhook): Promise<WebhookVerdict> {
    const signed = { id: header(headers, 'webhook-id'), timestamp: header(headers, 'webhook-timestamp'), signature: header(headers, 'webhook-signature') };
    const { replicateSecrets, toleranceS } = this.options;
    let check = checkStandardWebhook(signed, body, await replicateSecrets.current(), toleranceS);
    if (check === 'forged') {
      const again = await replicateSecrets.refreshed();
      if (again) check = checkStandardWebhook(signed, body, again, toleranceS);
    }
    if (check !== 'valid') return { kind: 'refused', reason: `Replicate signature ${check}` };
    const prediction = parseJson(body.toString('utf8'));
    const taskId = text(field(prediction, 'id'));
    if (taskId === null) return { kind: 'refused', reason: 'a prediction without an id' };
    const webhook = text(field(prediction, 'webhook'));
    if (webhook !== null && generationOfCallbackUrl(webhook) !== generationId) return { kind: 'refused', reason: 'the prediction was made for another generation' };
    const outcome = predictionOutcome(prediction, undefined).kind;
    return { kind: 'task', taskId, finished: outcome !== 'running' && outcome !== 'unavailable' };
  }

  /** `{request_id, status: OK | ERROR, payload}`, ED25519 signed; the signed request id must be the body's. */
  private async fal({ headers, body }: ReceivedWebhook): Promise<WebhookVerdict> {
    const signed = {
      requestId: header(headers, 'x-fal-webhook-request-id'),
      userId: header(headers, 'x-fal-webhook-user-id'),
      timestamp: header(headers, 'x-fal-webhook-timestamp'),
      signature: header(headers, 'x-fal-webhook-signature'),
    };
    const { falKeys, toleranceS } = this.options;
    const checkWith = (keys: KeyObject[]) => checkFalWebhook(signed, body, keys, toleranceS);
    let check = checkWith(await falKeys.current());
    if (check === 'forged') {
      const again = await falKeys.refreshed();
      if (again) check = checkWith(again);
    }
    if (check !== 'valid') return { kind: 'refused', reason: `fal signature ${check}` };
    const payload = parseJson(body.toString('utf8'));
    const taskId = text(field(payload, 'request_id'));
    if (taskId === null || taskId !== signed.requestId) return { kind: 'refused', reason: 'the body names another request than its signature' };
    return { kind: 'task', taskId, finished: falWebhookOutcome(payload).kind !== 'unavailable' };
  }
}

/** The simulator's own protocol: `{id, status}`, no signature but our URL's. */
function simulatorTask(body: Buffer): WebhookVerdict {
  const task = parseJson(body.toString('utf8'));
  const taskId = text(field(task, 'id'));
  if (taskId === null) return { kind: 'refused', reason: 'a task without an id' };
  return { kind: 'task', taskId, finished: ['succeeded', 'failed'].includes(String(field(task, 'status'))) };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export interface ProviderWebhookSettings {
  replicateBaseUrl: string;
  replicateWebhookSecrets: readonly string[];
  falJwksUrl: string;
  toleranceS: number;
  callTimeoutMs: number;
}

/** The checks of one web process: Replicate's secrets and fal's keys read once and kept. */
export function providerWebhooks(settings: ProviderWebhookSettings, replicateAccounts: () => readonly ProviderAccount[]): ProviderWebhooks {
  return new ProviderWebhooks({
    replicateSecrets: new ReplicateWebhookSecrets({
      configured: settings.replicateWebhookSecrets,
      baseUrl: settings.replicateBaseUrl,
      accounts: replicateAccounts,
      timeoutMs: settings.callTimeoutMs,
    }),
    falKeys: new FalWebhookKeys({ jwksUrl: settings.falJwksUrl, timeoutMs: settings.callTimeoutMs }),
    toleranceS: settings.toleranceS,
  });
}
