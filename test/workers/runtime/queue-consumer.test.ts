import { expect } from 'chai';
import { enqueue } from '../../../db/queues';
import { startQueueConsumer } from '../../../workers/runtime/queue-consumer';
import { resetDatabase, services } from '../../harness';
import { eventually } from '../../../scripts/wait';

describe('the queue consumer', function () {
  this.timeout(20_000);
  beforeEach(() => resetDatabase());

  it('touches a job that has a heartbeat while its handler runs, and completes it after', async () => {
    const { db, boss } = services();
    const jobId = await db.transaction((trx) => enqueue(boss, trx, 'generation-media', { generationId: '00000000-0000-4000-8000-000000000001' }));
    const heartbeat = async () => {
      const job = await boss.getJobById('generation-media', jobId!);
      return { heartbeat_on: job!.heartbeatOn!, started_on: job!.startedOn! };
    };
    let finish = () => undefined as void;
    const consumer = await startQueueConsumer(services(), {
      queue: 'generation-media',
      concurrency: 1,
      idleMs: 50,
      handle: () => new Promise<void>((resolve) => { finish = resolve; }),
    });
    try {
      const touched = await eventually(heartbeat, (row) => row.started_on !== null && row.heartbeat_on.getTime() - row.started_on.getTime() >= 3000, 8000);
      expect(touched.heartbeat_on.getTime()).to.be.greaterThan(touched.started_on.getTime());
      finish();
      await eventually(async () => (await boss.getJobById('generation-media', jobId!))?.state, (state) => state === 'completed', 5000);
    } finally {
      finish();
      await consumer.stop();
    }
  });
});
