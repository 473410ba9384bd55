import { PgBoss } from 'pg-boss';
import type { Logger } from '../common/logger';
import { PreparingClient } from './prepared-statements';
import { withBossSchemaUpgrade } from './boss-upgrade';
import { queueNames } from './queues';

export const bossSchema = 'pgboss';

/** Starts pg-boss on its own schema, upgrading a pg-boss 10 schema first (`boss-upgrade.ts`), with every queue created. */
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
  return boss;
}

function ignoreDuplicateQueue(error: unknown): void {
  // Two processes starting together both try to create the queue; the loser's insert conflicts.
  if (!/already exists|duplicate key/i.test(String((error as Error).message))) throw error;
}
