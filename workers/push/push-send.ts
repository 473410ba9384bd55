import type { Knex } from 'knex';
import { userLocale } from '../../db/accounts/user-locale';
import { forgetPushDevice, pushDevicesOf } from '../../db/push/push-devices';
import { devicesReached, logGenerationPush } from '../../db/push/push-log';
import type { QueuePayloads } from '../../db/queues';
import type { Logger } from '../../logger';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';
import { generationPushText, isTerminalStatus } from './push-messages';
import { pushSenderFromConfig } from './gateways/from-config';
import type { PushSender } from './push-sender';

/**
 * The `push-send` job: the generation pipeline enqueues one in the transaction of every terminal
 * status, so a slow or broken gateway never delays a status change. The job sends to every device
 * of the user, in the user's language, and logs each delivery in `push_log`; a retry after a
 * partial failure skips the devices already reached.
 */
export async function sendGenerationPush(db: Knex, sender: PushSender, job: QueuePayloads['push-send'], log: Logger): Promise<number> {
  // The queue's data is not checked by anyone before it gets here.
  if (!isTerminalStatus(job.status)) {
    log.warn({ generationId: job.generationId, status: job.status }, 'push-send job for a non-terminal status; ignored');
    return 0;
  }
  const locale = await userLocale(db, job.userId);
  if (locale === null) return 0;
  const devices = await pushDevicesOf(db, job.userId);
  if (!devices.length) return 0;
  const reached = await devicesReached(db, job.generationId);
  const { title, body } = generationPushText(locale, job.status);
  const data = { generation_id: job.generationId, status: job.status, error_code: job.errorCode ?? '' };
  let sent = 0;
  // Every device is tried and logged before a failure fails the job, so its retry skips them.
  const results = await Promise.allSettled(devices.filter((device) => !reached.has(device.id)).map(async (device) => {
    const outcome = await sender.send({ token: device.token, platform: device.platform, title, body, data });
    if (outcome === 'invalid_token') return forgetPushDevice(db, device.id);
    sent += 1;
    await logGenerationPush(db, { userId: job.userId, deviceId: device.id, platform: device.platform, reference: job.generationId, title, body, data });
  }));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  return sent;
}

/** The sender of this deployment: the gateways configured (FCM, APNs), else the log-only one. */
export function createPushSender(services: Pick<Services, 'log' | 'config'>): PushSender {
  return pushSenderFromConfig(services.config.push, services.log);
}

/** Works the `push-send` queue: each job on its own, a few at once (gateways answer slowly). */
export async function startPushSend(services: Services, sender: PushSender = createPushSender(services)): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'push-send',
    concurrency: 8,
    idleMs: 500,
    handle: async (job) => {
      await sendGenerationPush(services.db, sender, job.data, services.log);
    },
  });
}
