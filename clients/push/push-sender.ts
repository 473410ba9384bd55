import type { Platform } from '../../common/platform';
import type { Logger } from '../../common/logger';

/**
 * The push gateway behind one interface. A sender answers `sent` or `invalid_token` (the app was
 * uninstalled: the device is forgotten) and throws on a transient failure (the job is retried and
 * skips the devices it already reached).
 */
export interface PushMessage {
  token: string;
  platform: Platform;
  title: string;
  body: string;
  /** Gateways carry string values only. */
  data: Record<string, string>;
}

export type PushOutcome = 'sent' | 'invalid_token';

export interface PushSender {
  readonly name: string;
  send(message: PushMessage): Promise<PushOutcome>;
}

/**
 * The embedded default (README.md, "The two commands"): sends nothing, writes a log line per message and
 * keeps the last messages in memory. What was "sent" is also in `push_log`, like for any sender.
 */
export class RecordingPushSender implements PushSender {
  readonly name = 'recording';
  private static readonly kept = 1000;
  readonly sent: PushMessage[] = [];

  constructor(private readonly log: Logger) {}

  async send(message: PushMessage): Promise<PushOutcome> {
    this.sent.push(message);
    if (this.sent.length > RecordingPushSender.kept) this.sent.shift();
    // The token names a person's phone: only its tail goes to the log.
    this.log.info({ push: { platform: message.platform, token: `…${message.token.slice(-6)}`, title: message.title, data: message.data } }, 'push (log-only sender)');
    return 'sent';
  }
}
