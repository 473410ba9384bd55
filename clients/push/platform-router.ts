import type { Platform } from '../../common/platform';
import type { PushMessage, PushOutcome, PushSender } from './push-sender';

/** Sends each message through the gateway of its device's platform: Android to FCM, iOS to APNs. */
export class PlatformPushSender implements PushSender {
  readonly name: string;

  constructor(private readonly senders: Readonly<Record<Platform, PushSender>>) {
    this.name = `android:${senders.android.name},ios:${senders.ios.name}`;
  }

  send(message: PushMessage): Promise<PushOutcome> {
    return this.senders[message.platform].send(message);
  }
}
