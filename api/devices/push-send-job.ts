import type { Knex } from 'knex';
import type { Job } from 'pg-boss';
import pLimit from 'p-limit';
import { queues } from '../../db/boss';
import type { Logger } from '../../logger';
import type { RunningPart, Services } from '../services';
import { generationPushText, isTerminalStatus } from './push-messages';
import { devicesOf, forgetDevice } from './push-devices';
import { pushSenderFromConfig } from './push-gateways/from-config';
import type { PushSender } from './push-sender';

/**
 * The `push-send` job: the generation pipeline enqueues one in the transaction of every terminal
 * status, so a slow or broken gateway never delays a status change. The job sends to every device
 * of the user, in the user's language, and logs each delivery in `push_log`; a retry after a
 * partial failure skips the devices already reached.
 */
export interface PushSendJob {
  userId: string;
  generationId: string;
  status: string;
  errorCode: string | null;
}

export async function sendGenerationPush(db: Knex, sender: PushSender, job: PushSendJob, log: Logger): Promise<number> {
  if (!isTerminalStatus(job.status)) {
    log.warn({ generationId: job.generationId, status: job.status }, 'push-send job for a non-terminal status; ignored');
    return 0;
  }
  const user = await db('users').where({ id: job.userId }).first('locale');
  if (!user) return 0;
  const devices = await devicesOf(db, job.userId);
  if (!devices.length) return 0;
  const reached = new Set<string>(
    await db('push_log').where({ kind: 'generation', reference: job.generationId }).pluck('device_id'),
  );
  const { title, body } = generationPushText(user.locale, job.status);
  const data = { generation_id: job.generationId, status: job.status, error_code: job.errorCode ?? '' };
  let sent = 0;
  // Every device is tried and logged before a failure fails the job, so its retry skips them.
  const results = await Promise.allSettled(devices.filter((device) => !reached.has(device.id)).map(async (device) => {
    const outcome = await sender.send({ token: device.token, platform: device.platform, title, body, data });
    if (outcome === 'invalid_token') return forgetDevice(db, device.id);
    sent += 1;
    await db.raw(
      `insert into push_log (user_id, device_id, platform, kind, reference, title, body, data)
       values (?, ?, ?, 'generation', ?, ?, ?, ?) on conflict on constraint push_log_once do nothing`,
      [job.userId, device.id, device.platform, job.generationId, title, body, JSON.stringify(data)],
    );
  }));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  return sent;
}

/** The sender of this deployment: the gateways configured (FCM, APNs), else the log-only one. */
export function createPushSender(services: Pick<Services, 'log' | 'config'>): PushSender {
  return pushSenderFromConfig(services.config.push, services.log);
}

/**
 * Works the `push-send` queue: batches of jobs, each job on its own (one failure does not fail the
 * batch). A worker loop fetches at most one batch per polling interval, hence the batch size.
 */
export async function startPushSendJobs(services: Services, sender: PushSender = createPushSender(services)): Promise<RunningPart> {
  const { boss, db, log } = services;
  const limit = pLimit(8);
  const workerId = await boss.work<PushSendJob>(queues.pushSend, { batchSize: 50, pollingIntervalSeconds: 0.5 }, async (jobs) => {
    const failed: Job<PushSendJob>[] = [];
    await Promise.all(jobs.map((job) => limit(async () => {
      try {
        await sendGenerationPush(db, sender, job.data, log);
      } catch (error) {
        log.warn({ err: error, jobId: job.id, generationId: job.data.generationId }, 'push-send failed; will retry');
        failed.push(job);
      }
    })));
    // pg-boss completes the whole batch when the handler returns; failed jobs are failed first.
    if (failed.length) await boss.fail(queues.pushSend, failed.map((job) => job.id));
  });
  return { stop: () => boss.offWork(queues.pushSend, { id: workerId }) };
}
