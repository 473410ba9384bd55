import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * The device registry. A `device_id` is the key to a guest account (whoever presents it gets the
 * guest), so it is treated like a password: only its SHA-256 is stored.
 */
export function deviceHash(deviceId: string): string {
  return createHash('sha256').update(deviceId).digest('hex');
}

export function optionalDeviceHash(deviceId: string | undefined): string | null {
  return deviceId === undefined ? null : deviceHash(deviceId);
}

/** Remembers that this account signed in from this device. */
export async function recordUserDevice(db: Knex, userId: string, hash: string): Promise<void> {
  await db.raw(
    `insert into user_devices (user_id, device_hash) values (?, ?)
     on conflict (user_id, device_hash) do update set last_seen_at = now()`,
    [userId, hash],
  );
}

/** Whether the account signed in from this device before (the trusted-device login rule). */
export async function isKnownDevice(db: Knex, userId: string, hash: string): Promise<boolean> {
  return (await db('user_devices').where({ user_id: userId, device_hash: hash }).first('user_id')) !== undefined;
}

/** Whether a full account ever signed in from this device (then it cannot host a guest). */
export async function deviceHasFullAccount(db: Knex, hash: string): Promise<boolean> {
  const row = await db('user_devices')
    .join('users', 'users.id', 'user_devices.user_id')
    .where({ 'user_devices.device_hash': hash, 'users.is_anonymous': false })
    .first('users.id');
  return row !== undefined;
}

/** Whether two accounts ever signed in from one device (the referral same-device rule). */
export async function shareADevice(db: Knex, userA: string, userB: string): Promise<boolean> {
  const row = await db('user_devices as a')
    .join('user_devices as b', 'a.device_hash', 'b.device_hash')
    .where({ 'a.user_id': userA, 'b.user_id': userB })
    .first('a.device_hash');
  return row !== undefined;
}
