import type { Config } from '../../config';

/**
 * When the scheduler asks the processor about a payment next, by status. Each transition sets the
 * next check in its own statement; the reconciliation round ends a watch when its time is over.
 */
export type WatchSettings = Config['payments'];

export function watchBindings(settings: WatchSettings) {
  return {
    firstCheckS: settings.reconcileFirstCheckS,
    lateIntervalS: settings.lateCheckIntervalS,
    chargebackIntervalS: settings.chargebackCheckIntervalS,
    chargebackWatchDays: settings.chargebackWatchDays,
  };
}
