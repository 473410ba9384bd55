import type { Config } from '../../config';
import type { Circuits } from '../../common/circuit';
import type { Logger } from '../../common/logger';
import { RecordingPushSender, type PushSender } from './push-sender';
import { ApnsSender } from './apns';
import { FcmSender } from './fcm';
import { PlatformPushSender } from './platform-router';
import type { RetryPolicy } from './retry';

/** Test seams: where the gateways are reached and how a backoff waits. */
export interface GatewayOverrides {
  fcmEndpoint?: string;
  apnsOrigin?: string;
  apnsCa?: string | Buffer;
  sleep?: RetryPolicy['sleep'];
  random?: RetryPolicy['random'];
}

/**
 * The push sender of this deployment, from config: FCM for Android and APNs for iOS where each is
 * configured, the log-only recording sender for a platform without its gateway (said once in the
 * log at start), and the recording sender alone when neither is configured (the embedded default).
 *
 * Each gateway's circuit is one of the process's own (`circuits`, kept in memory): sends are many
 * and short, made by every worker process, so a database read per send would cost more than it
 * saves; each process learns an outage from its own first failures (a few sends, which the job's
 * retry covers) and warns once.
 */
export function pushSenderFromConfig(settings: Config['push'], log: Logger, circuits: Circuits, overrides: GatewayOverrides = {}): PushSender {
  const recording = new RecordingPushSender(log);
  if (!settings.fcm && !settings.apns) {
    log.info('push: no gateway configured; pushes are only logged (FCM_SERVICE_ACCOUNT_JSON, APNS_KEY)');
    return recording;
  }
  const retry: RetryPolicy = {
    attempts: settings.attempts,
    baseDelayMs: settings.retryBaseMs,
    maxWaitMs: settings.maxRetryWaitMs,
    sleep: overrides.sleep,
    random: overrides.random,
  };
  // A probe lasts a try: a token exchange (or a new HTTP/2 session) and the send, each within the timeout.
  const probeTimeoutMs = 2 * settings.timeoutMs + 1000;
  const android = settings.fcm
    ? new FcmSender({ ...settings.fcm, retry, circuit: circuits.of('push gateway FCM', probeTimeoutMs), timeoutMs: settings.timeoutMs, log, endpoint: overrides.fcmEndpoint })
    : recording;
  const ios = settings.apns
    ? new ApnsSender({ ...settings.apns, retry, circuit: circuits.of('push gateway APNs', probeTimeoutMs), timeoutMs: settings.timeoutMs, log, origin: overrides.apnsOrigin, ca: overrides.apnsCa })
    : recording;
  for (const [platform, sender, variable] of [['android', android, 'FCM_SERVICE_ACCOUNT_JSON'], ['ios', ios, 'APNS_KEY']] as const) {
    if (sender === recording) log.warn({ platform }, `push: no gateway for ${platform} (${variable} unset); its pushes are only logged`);
  }
  log.info({ android: android.name, ios: ios.name }, 'push gateways');
  return new PlatformPushSender({ android, ios });
}
