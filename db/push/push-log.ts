import type { Knex } from 'knex';
import type { Platform } from '../../common/platform';
import type { PushKind } from './push-job';

/** What was sent to one device, once per (device, kind, reference): a retried job skips it. */
export interface PushLogEntry {
  userId: string;
  deviceId: string;
  platform: Platform;
  kind: PushKind;
  /** What the push was about (`PushJob.reference`). */
  reference: string;
  title: string;
  body: string;
  data: Record<string, string>;
}

/** The devices a push (its kind and reference) has reached already. */
export async function devicesReached(db: Knex, push: { kind: PushKind; reference: string }): Promise<Set<string>> {
  const { rows } = await db.raw<{ rows: { device_id: string }[] }>(
    'select device_id from push_log where kind = ? and reference = ?',
    [push.kind, push.reference],
  );
  return new Set(rows.map((row) => row.device_id));
}

export async function logPush(db: Knex, entry: PushLogEntry): Promise<void> {
  await db.raw(
    `insert into push_log (user_id, device_id, platform, kind, reference, title, body, data)
     values (?, ?, ?, ?, ?, ?, ?, ?) on conflict on constraint push_log_once do nothing`,
    [entry.userId, entry.deviceId, entry.platform, entry.kind, entry.reference, entry.title, entry.body, JSON.stringify(entry.data)],
  );
}
