import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The signed URL the provider calls when a task finishes (`POST`, the task as its body), one per
 * generation: `{base}/webhooks/provider/tasks/{generationId}?expires={unix s}&signature={HMAC}`.
 * The HMAC-SHA256 covers the generation id and the expiry, under a key derived from TOKEN_SECRET
 * (every process has it; nobody else does), so a URL cannot be made up, moved to another generation
 * or extended. A replay within its life is harmless: the callback is recorded once per generation
 * (`db/generations/record-task-callback.ts`) and a repeat changes nothing.
 */
export const TASK_CALLBACK_PATH = '/webhooks/provider/tasks/';

function callbackKey(tokenSecret: string): Buffer {
  return createHmac('sha256', tokenSecret).update('provider task callback v1').digest();
}

function signatureOf(tokenSecret: string, generationId: string, expiresS: number): Buffer {
  return createHmac('sha256', callbackKey(tokenSecret)).update(`${generationId}.${expiresS}`).digest();
}

export function taskCallbackUrl(baseUrl: string, tokenSecret: string, generationId: string, expiresS: number): string {
  const signature = signatureOf(tokenSecret, generationId, expiresS).toString('base64url');
  return `${baseUrl.replace(/\/+$/, '')}${TASK_CALLBACK_PATH}${generationId}?expires=${expiresS}&signature=${signature}`;
}

/** Whether `signature` is ours for this generation and expiry, and the expiry has not passed. */
export function validTaskCallback(tokenSecret: string, generationId: string, expires: string, signature: string, nowS = Date.now() / 1000): boolean {
  if (!/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return false;
  const expiresS = Number(expires);
  if (expiresS < nowS) return false;
  return timingSafeEqual(Buffer.from(signature, 'base64url'), signatureOf(tokenSecret, generationId, expiresS));
}
