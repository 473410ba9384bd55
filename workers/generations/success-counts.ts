import { rollUpSuccessCounts } from '../../db/generations/roll-up-success-counts';
import type { RunningPart, Services } from '../../services';
import { startTimedRounds } from '../runtime/timed-rounds';

/** How often the tallies of succeeded generations reach `effects.success_count`. */
const rollUpEveryMs = 2000;
const batch = 10_000;

/**
 * The scheduler's roll-up of success tallies into the effects' popularity counts
 * (`db/generations/roll-up-success-counts.ts`): every two seconds, and at once again after a full
 * batch. Several schedulers may run it together.
 */
export function startSuccessCountRollUp(services: Services): RunningPart {
  return startTimedRounds(services, {
    name: 'success-counts',
    everyMs: rollUpEveryMs,
    round: async () => (await rollUpSuccessCounts(services.db, batch)) === batch,
  });
}
