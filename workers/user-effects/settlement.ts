import { findDueEarnings, secondsUntilNextSettlement } from '../../db/user-effects/claim-due-earnings';
import { settleEarning } from '../../db/user-effects/settle-earning';
import type { RunningPart, Services } from '../../services';
import { clockRounds, clockSleepMs } from '../runtime/clock-rounds';
import { startJobLoop } from '../runtime/job-loop';

/**
 * The settlement of author earnings in the scheduler role (docs/mobile.md, "The marketplace of user effects"): at `settles_at` each
 * pending earning becomes `settled`, one `effect_earned` ledger row and one push, in one
 * transaction (`db/user-effects/settle-earning.ts`). Its own job loop, like the subscription
 * clock, because billing days may be seconds long; it sleeps until the next earning is due. Two
 * schedulers may pick the same earning: the guarded statement lets one settle it, the other
 * changes nothing.
 */
const batch = 50;
const concurrency = 4;

export async function startEarningSettlement(services: Services): Promise<RunningPart> {
  const { db, boss } = services;
  const sleepMs = clockSleepMs(services.config.billingDayS);
  return startJobLoop(services, {
    name: 'earning-settlement',
    concurrency,
    idleMs: sleepMs,
    claim: async (room) => (room > 0 ? findDueEarnings(db, Math.min(room, batch)) : []),
    handle: async (earningId: string) => {
      await db.transaction((trx) => settleEarning(trx, boss, earningId));
    },
    nextRoundInMs: clockRounds(sleepMs, () => secondsUntilNextSettlement(db)),
  });
}
