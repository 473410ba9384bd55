import { setTimeout as sleep } from 'node:timers/promises';
import { notificationChecksum } from '../../clients/payment-processor/signature';
import type { Logger } from '../../common/logger';
import { exchange, isSuccess } from '../../clients/outbound-http';
import type { OrderEvent } from './orders';

export interface NotifierSettings {
  callbackUrl: string;
  secret: string;
  /** Pause before each retry; its length is the number of retries. */
  retryDelaysMs: readonly number[];
  attemptTimeoutMs: number;
  log?: Logger;
}

export interface Notifier {
  notify(event: OrderEvent): void;
  /** Notifications the merchant has answered `2xx` so far: a test waits for one before it goes on. */
  delivered(): number;
}

/**
 * Sends signed callbacks by form POST, fire-and-forget: a merchant that is down must never break the
 * payer's page, so failures are only logged.
 */
export function createNotifier(settings: NotifierSettings): Notifier {
  let delivered = 0;
  return {
    notify: (event) => {
      const params = {
        mdOrder: event.order.orderId,
        orderNumber: event.order.orderNumber,
        operation: event.operation,
        status: event.success ? '1' : '0',
      };
      void deliver(settings, { ...params, checksum: notificationChecksum(params, settings.secret) }).then((answered) => {
        if (answered) delivered += 1;
      });
    },
    delivered: () => delivered,
  };
}

/** True once the merchant answered `2xx`. */
async function deliver(settings: NotifierSettings, params: Record<string, string>): Promise<boolean> {
  const { log } = settings;
  const context = { orderId: params.mdOrder, operation: params.operation };
  for (const delayMs of [0, ...settings.retryDelaysMs]) {
    if (delayMs > 0) await sleep(delayMs);
    try {
      const { status } = await exchange(settings.callbackUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(params).toString(),
        timeoutMs: settings.attemptTimeoutMs,
      });
      if (isSuccess(status)) return true;
      log?.warn({ ...context, httpStatus: status }, 'processor simulator: notification refused');
    } catch (error) {
      log?.warn({ ...context, err: error }, 'processor simulator: notification not delivered');
    }
  }
  log?.error(context, 'processor simulator: notification given up');
  return false;
}
