import type { IncomingHttpHeaders } from 'node:http';
import type { KeyObject } from 'node:crypto';
import type { ProviderKind } from '../../common/model-route';
import type { ProviderAccount } from './adapter';
import { falWebhookOutcome } from './fal';
import { simulatorTaskOutcome } from './http-client';
import { checkFalWebhook, FalWebhookKeys } from './fal-webhook';
import { field, parseJson, text } from './provider-call';
import { predictionOutcome } from './replicate';
import { checkStandardWebhook, ReplicateWebhookSecrets } from './replicate-webhook';
import { generationOfCallbackUrl } from './task-callback';

/**
 * What a provider's call to our signed callback URL says, once the provider's own signature is
 * checked (the URL's is checked before): the task it names and whether it is finished, mapped as a
 * poll of the same task would be (`predictionOutcome`, `falWebhookOutcome`, `simulatorTaskOutcome`).
 * A finished task's `answer` is the fields of the body that a poll reads (the rest, a prediction's
 * logs and input, can be megabytes): the poll the callback makes due reads them with the task's
 * route (`outcomeOfCallback` of its adapter) instead of asking the provider again, one round trip
 * to the provider less between its end and the result's copy. Null when it is not finished, or
 * when those fields alone are larger than `maxAnswerBytes`: that poll asks the provider.
 */
export type WebhookVerdict =
  | { kind: 'refused'; reason: string }
  | { kind: 'task'; taskId: string; finished: boolean; answer: Record<string, unknown> | null };

/** A callback's answer kept on the row: a link or two and an error; a larger one (an inline file) is read by polling. */
const maxAnswerBytes = 16 * 1024;

/** The fields a poll reads of a finished task's body, or null (see `WebhookVerdict`). */
function answerOf(body: unknown, finished: boolean, fields: readonly string[]): Record<string, unknown> | null {
  if (!finished) return null;
  const answer = Object.fromEntries(fields.flatMap((name) => {
    const value = field(body, name);
    return value === undefined ? [] : [[name, value]];
  }));
  return Buffer.byteLength(JSON.stringify(answer)) <= maxAnswerBytes ? answer : null;
}

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
    const finished = outcome !== 'running' && outcome !== 'unavailable';
    return { kind: 'task', taskId, finished, answer: answerOf(prediction, finished, ['status', 'output', 'error']) };
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
    const finished = falWebhookOutcome(payload, undefined).kind !== 'unavailable';
    return { kind: 'task', taskId, finished, answer: answerOf(payload, finished, ['status', 'payload', 'error']) };
  }
}

/** The simulator's own protocol: the task as `GET /v1/tasks/{id}` shows it, no signature but our URL's. */
function simulatorTask(body: Buffer): WebhookVerdict {
  const task = parseJson(body.toString('utf8'));
  const taskId = text(field(task, 'id'));
  if (taskId === null) return { kind: 'refused', reason: 'a task without an id' };
  const outcome = simulatorTaskOutcome(task).kind;
  const finished = outcome === 'succeeded' || outcome === 'failed';
  return { kind: 'task', taskId, finished, answer: answerOf(task, finished, ['status', 'result', 'error']) };
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
