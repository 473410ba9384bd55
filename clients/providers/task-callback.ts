import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ProviderKind } from '../../common/model-route';

/**
 * The signed URL the provider calls when a task finishes (`POST`, the task as its body), one per
 * generation: `{base}/webhooks/provider/tasks/{generationId}?expires={unix s}&signature={HMAC}` for
 * the simulator's protocol, `{base}/webhooks/provider/{kind}/tasks/{generationId}?...` for a hosted
 * API's (its own webhook body, signed by the provider as well). The HMAC-SHA256 covers the kind, the
 * generation id and the expiry, under a key derived from TOKEN_SECRET (every process has it; nobody
 * else does), so a URL cannot be made up, moved to another generation or kind, or extended. A replay
 * within its life is harmless: the callback is recorded once per generation
 * (`db/generations/record-task-callback.ts`) and a repeat changes nothing.
 */
export const TASK_CALLBACK_PATH = '/webhooks/provider/tasks/';

/** Where a kind's callbacks arrive; the simulator's path is the one its URLs always had. */
export function taskCallbackPath(kind: ProviderKind): string {
  return kind === 'simulator' ? TASK_CALLBACK_PATH : `/webhooks/provider/${kind}/tasks/`;
}

function callbackKey(tokenSecret: string): Buffer {
  return createHmac('sha256', tokenSecret).update('provider task callback v1').digest();
}

function signatureOf(tokenSecret: string, kind: ProviderKind, generationId: string, expiresS: number): Buffer {
  const signed = kind === 'simulator' ? `${generationId}.${expiresS}` : `${kind}.${generationId}.${expiresS}`;
  return createHmac('sha256', callbackKey(tokenSecret)).update(signed).digest();
}

export function taskCallbackUrl(baseUrl: string, tokenSecret: string, generationId: string, expiresS: number, kind: ProviderKind = 'simulator'): string {
  const signature = signatureOf(tokenSecret, kind, generationId, expiresS).toString('base64url');
  return `${baseUrl.replace(/\/+$/, '')}${taskCallbackPath(kind)}${generationId}?expires=${expiresS}&signature=${signature}`;
}

/** Whether `signature` is ours for this kind, generation and expiry, and the expiry has not passed. */
export function validTaskCallback(
  tokenSecret: string,
  generationId: string,
  expires: string,
  signature: string,
  nowS = Date.now() / 1000,
  kind: ProviderKind = 'simulator',
): boolean {
  if (!/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return false;
  const expiresS = Number(expires);
  if (expiresS < nowS) return false;
  return timingSafeEqual(Buffer.from(signature, 'base64url'), signatureOf(tokenSecret, kind, generationId, expiresS));
}

/**
 * The generation a callback URL of ours names (a provider echoes the webhook a task was created
 * with: Replicate's predictions do), or null for any other link. The signature is not checked: this
 * only tells which generation a task was submitted for.
 */
export function generationOfCallbackUrl(url: string): string | null {
  const path = URL.parse(url)?.pathname ?? '';
  const match = /^(?:.*)\/webhooks\/provider\/(?:[a-z]+\/)?tasks\/([0-9a-f-]{36})$/.exec(path);
  return match ? match[1] : null;
}
