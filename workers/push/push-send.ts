import type { Knex } from 'knex';
import { userLocale } from '../../db/accounts/user-locale';
import { forgetPushDevice, pushDevicesOf } from '../../db/push/push-devices';
import { generationPush, type PushJob } from '../../db/push/push-job';
import { devicesReached, logPush } from '../../db/push/push-log';
import type { Logger } from '../../common/logger';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';
import { pushSenderFromConfig } from '../../clients/push/from-config';
import { pushText } from './push-messages';
import type { PushSender } from '../../clients/push/push-sender';

/**
 * The `push-send` job: whatever a user is told by push (a terminal generation status, a
 * subscription reminder) is enqueued in the transaction of the change it tells of, so a slow or
 * broken gateway never delays it. The job sends to every device of the user, in the user's
 * language, and logs each delivery in `push_log`; a retry after a partial failure skips the devices
 * already reached.
 */
export async function sendPush(db: Knex, sender: PushSender, queued: unknown, log: Logger): Promise<number> {
  // The queue's data is not checked by anyone before it gets here.
  const job = pushJobOf(queued);
  if (!job) {
    log.warn('push-send job of an unknown shape; ignored');
    return 0;
  }
  const locale = await userLocale(db, job.userId);
  if (locale === null) return 0;
  const text = pushText(locale, job);
  if (!text) {
    log.warn({ kind: job.kind, reference: job.reference }, 'push-send job with no text for its kind and data; ignored');
    return 0;
  }
  const devices = await pushDevicesOf(db, job.userId);
  if (!devices.length) return 0;
  const reached = await devicesReached(db, job);
  const { title, body } = text;
  let sent = 0;
  // Every device is tried and logged before a failure fails the job, so its retry skips them.
  const results = await Promise.allSettled(devices.filter((device) => !reached.has(device.id)).map(async (device) => {
    const outcome = await sender.send({ token: device.token, platform: device.platform, title, body, data: job.data });
    if (outcome === 'invalid_token') return forgetPushDevice(db, device.id);
    sent += 1;
    await logPush(db, { userId: job.userId, deviceId: device.id, platform: device.platform, kind: job.kind, reference: job.reference, title, body, data: job.data });
  }));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  return sent;
}

/**
 * The job's data as a `PushJob`, or null. Jobs queued by the version before push kinds existed
 * (`{userId, generationId, status, errorCode}`) are generation pushes.
 */
function pushJobOf(data: unknown): PushJob | null {
  if (typeof data !== 'object' || data === null) return null;
  const job = data as Partial<PushJob> & { generationId?: unknown; status?: unknown; errorCode?: unknown };
  if (typeof job.generationId === 'string' && (job.status === 'succeeded' || job.status === 'failed') && typeof job.userId === 'string') {
    return generationPush({ userId: job.userId, generationId: job.generationId, status: job.status, errorCode: typeof job.errorCode === 'string' ? job.errorCode : null });
  }
  const stringsOnly = typeof job.data === 'object' && job.data !== null && Object.values(job.data).every((value) => typeof value === 'string');
  if (typeof job.userId !== 'string' || typeof job.kind !== 'string' || typeof job.reference !== 'string' || !stringsOnly) return null;
  return job as PushJob;
}

/** The sender of this deployment: the gateways configured (FCM, APNs), else the log-only one. */
export function createPushSender(services: Pick<Services, 'log' | 'config' | 'circuits'>): PushSender {
  return pushSenderFromConfig(services.config.push, services.log, services.circuits);
}

/** Works the `push-send` queue: each job on its own, a few at once (gateways answer slowly). */
export async function startPushSend(services: Services, sender: PushSender = createPushSender(services)): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'push-send',
    concurrency: 8,
    idleMs: 500,
    handle: async (job) => {
      await sendPush(services.db, sender, job.data, services.log);
    },
  });
}
