import type { RunningPart, Services } from '../../services';
import { Wakeup } from './wakeup';

/**
 * A plain loop of rounds on a timer, for upkeep that claims nothing (no items, no NOTIFY): a round
 * every `everyMs`, at once again when it answers that more is waiting. A failed round is logged and
 * the next one comes on time.
 */
export function startTimedRounds(services: Pick<Services, 'log'>, rounds: { name: string; everyMs: number; round: () => Promise<boolean> }): RunningPart {
  const wakeup = new Wakeup();
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      let moreWaiting = false;
      try {
        moreWaiting = await rounds.round();
      } catch (error) {
        services.log.warn({ err: error }, `${rounds.name}: a round failed`);
      }
      await wakeup.wait(moreWaiting ? 0 : rounds.everyMs);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      wakeup.wake();
      await running;
    },
  };
}
