import { analyzeQueueTable, staleQueueTables } from '../../db/queue-statistics';
import type { RunningPart, Services } from '../../services';
import { startTimedRounds } from './timed-rounds';

/** How often the scheduler looks at the pg-boss tables' change counts. */
const lookEveryMs = 5000;

/**
 * Keeps the planner's picture of the pg-boss job tables current (scheduler role). pg-boss fetches
 * with a statement whose plan depends on how many jobs the planner thinks a queue has: taken while
 * the queue was empty, the statistics make every fetch walk all of the queue's jobs (measured: 8 ms
 * a fetch at 3,000 renewal jobs, against 0.3 ms with fresh statistics). Autovacuum looks at most
 * once a minute, and only after a tenth of the table changed; this looks every few seconds and
 * analyzes a table once a thousand of its rows changed since the last time.
 */
export function startQueueStatistics(services: Services): RunningPart {
  const { db, log } = services;
  return startTimedRounds(services, {
    name: 'queue-statistics',
    everyMs: lookEveryMs,
    round: async () => {
      for (const table of await staleQueueTables(db)) {
        if (await analyzeQueueTable(db, table)) log.debug({ table }, 'queue-statistics: pg-boss table analyzed');
      }
      return false;
    },
  });
}
