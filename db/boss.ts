import { PgBoss } from 'pg-boss';
import type { Logger } from '../common/logger';
import { PreparingClient } from './prepared-statements';
import { legacySubmitQueue, withBossSchemaUpgrade } from './boss-upgrade';
import { enqueueMany, queueNames, submitQueueOf } from './queues';

export const bossSchema = 'pgboss';

/**
 * Starts pg-boss on its own schema, upgrading a pg-boss 10 schema first (`boss-upgrade.ts`), with
 * every queue created and the tickets of the one line of before provider kinds moved into the
 * simulator's (`moveLegacyTickets`).
 */
export async function startBoss(url: string, options: { supervise: boolean; schedule: boolean }, log: Logger): Promise<PgBoss> {
  const { boss, copiedJobs } = await withBossSchemaUpgrade(url, bossSchema, async () => {
    const boss = new PgBoss({
      connectionString: url,
      schema: bossSchema,
      application_name: 'effects-backend-boss',
      max: 4,
      supervise: options.supervise,
      schedule: options.schedule,
      migrate: true,
      // pg-boss hands its options to its pg.Pool, which makes its connections with this class.
      Client: PreparingClient,
    } as ConstructorParameters<typeof PgBoss>[0]);
    await boss.start();
    for (const name of queueNames) {
      if (!(await boss.getQueue(name))) await boss.createQueue(name).catch(ignoreDuplicateQueue);
    }
    return boss;
  });
  if (copiedJobs !== null) log.warn({ copiedJobs }, 'pg-boss 10 schema upgraded: unfinished jobs copied into the pg-boss 12 schema');
  const moved = await moveLegacyTickets(boss);
  if (moved) log.warn({ moved }, 'waiting generations moved from the generation-submit line to generation-submit.simulator');
  return boss;
}

/**
 * The waiting tickets of `generation-submit` go to the simulator's line with their ids (each
 * generation row names its ticket), oldest first; a second process doing the same at once skips
 * the ids already moved. Through pg-boss's own calls, at every start: a rare no-op read once the
 * old line is empty or gone.
 */
async function moveLegacyTickets(boss: PgBoss): Promise<number> {
  if (!(await boss.getQueue(legacySubmitQueue))) return 0;
  const waiting = await boss.findJobs<{ generationId: string }>(legacySubmitQueue, { queued: true });
  if (!waiting.length) return 0;
  waiting.sort((one, other) => one.createdOn.getTime() - other.createdOn.getTime());
  await enqueueMany(boss, null, submitQueueOf('simulator'), waiting.map((job) => ({ id: job.id, data: job.data })));
  await boss.deleteJob(legacySubmitQueue, waiting.map((job) => job.id));
  return waiting.length;
}

function ignoreDuplicateQueue(error: unknown): void {
  // Two processes starting together both try to create the queue; the loser's insert conflicts.
  if (!/already exists|duplicate key/i.test(String((error as Error).message))) throw error;
}
