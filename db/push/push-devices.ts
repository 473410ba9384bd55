import type { Knex } from 'knex';
import type { Platform } from '../../common/platform';

/**
 * The push devices of accounts (`push_devices`). A token belongs to one account at a time; it moves
 * to another account only when the request comes from the installation that registered it (same
 * `device_id`, compared by hash), so nobody can take over someone else's notifications by knowing
 * their token.
 */
export interface PushDevice {
  id: string;
  platform: Platform;
  created_at: Date;
}

export type Registration =
  | { outcome: 'created' | 'moved' | 'existing'; device: PushDevice }
  | { outcome: 'forbidden' };

const returned = 'id, platform, created_at';

export async function registerPushDevice(
  db: Knex,
  request: { userId: string; token: string; platform: Platform; deviceHash: string | null },
): Promise<Registration> {
  return db.transaction(async (trx) => {
    // A concurrent holder may delete the token between the two statements: then try again.
    for (;;) {
      const { rows: inserted } = await trx.raw<{ rows: PushDevice[] }>(
        `insert into push_devices (user_id, token, platform, device_hash) values (?, ?, ?, ?)
         on conflict (token) do nothing returning ${returned}`,
        [request.userId, request.token, request.platform, request.deviceHash],
      );
      if (inserted.length) return { outcome: 'created', device: inserted[0] };

      const holder = await trx('push_devices').where({ token: request.token }).forUpdate().first('id', 'user_id', 'device_hash');
      if (!holder) continue;
      if (holder.user_id === request.userId) {
        const { rows } = await trx.raw<{ rows: PushDevice[] }>(
          `update push_devices set platform = ?, device_hash = coalesce(?, device_hash), updated_at = now()
           where id = ? returning ${returned}`,
          [request.platform, request.deviceHash, holder.id],
        );
        return { outcome: 'existing', device: rows[0] };
      }
      if (request.deviceHash === null || holder.device_hash !== request.deviceHash) return { outcome: 'forbidden' };
      // Same installation, new account (a sign-in on the phone): a new record for the new owner,
      // so the previous owner's record and id are gone.
      const { rows } = await trx.raw<{ rows: PushDevice[] }>(
        `update push_devices set id = gen_random_uuid(), user_id = ?, platform = ?, created_at = now(), updated_at = now()
         where id = ? returning ${returned}`,
        [request.userId, request.platform, holder.id],
      );
      return { outcome: 'moved', device: rows[0] };
    }
  });
}

/** True when the device existed and was the caller's. */
export async function removePushDevice(db: Knex, userId: string, id: string): Promise<boolean> {
  return (await db('push_devices').where({ id, user_id: userId }).delete()) > 0;
}

/** A token the gateway reported as no longer valid (app uninstalled): forget it. */
export async function forgetPushDevice(db: Knex, id: string): Promise<void> {
  await db('push_devices').where({ id }).delete();
}

export interface PushTarget {
  id: string;
  token: string;
  platform: Platform;
}

export function pushDevicesOf(db: Knex, userId: string): Promise<PushTarget[]> {
  return db('push_devices').where({ user_id: userId }).orderBy('created_at').select('id', 'token', 'platform');
}
