import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Callback checksum: uppercase hex HMAC-SHA256 with the shared secret over every parameter except
 * `checksum`, sorted by name and joined as `name;value;`.
 */
export function notificationChecksum(params: Record<string, string>, secret: string): string {
  const signed = Object.keys(params)
    .filter((name) => name !== 'checksum')
    .sort()
    .map((name) => `${name};${params[name]};`)
    .join('');
  return createHmac('sha256', secret).update(signed, 'utf8').digest('hex').toUpperCase();
}

export function hasValidChecksum(params: Record<string, string>, secret: string): boolean {
  const received = params.checksum;
  if (typeof received !== 'string' || !/^[0-9a-fA-F]{64}$/.test(received)) return false;
  const expected = Buffer.from(notificationChecksum(params, secret), 'hex');
  return timingSafeEqual(expected, Buffer.from(received, 'hex'));
}
