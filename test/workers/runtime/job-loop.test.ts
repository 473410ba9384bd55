import { expect } from 'chai';
import { startJobLoop, type JobLoop } from '../../../workers/runtime/job-loop';
import { services } from '../../harness';
import { eventually } from '../../../scripts/wait';

describe('the job loop: a round after a finished item', function () {
  this.timeout(10_000);

  /** A loop of concurrency 2 that claims what `offer` holds (up to its room); each item runs until its own resolve is called. */
  async function loopOf(roundAfterItem: JobLoop<() => void>['roundAfterItem']) {
    const rooms: number[] = [];
    const offer: number[] = [];
    const finishers: (() => void)[] = [];
    const loop = await startJobLoop(services(), {
      name: 'test',
      concurrency: 2,
      idleMs: 60_000,
      roundAfterItem,
      claim: async (room) => {
        rooms.push(room);
        return offer.splice(0, room).map(() => () => undefined);
      },
      handle: () => new Promise<void>((resolve) => { finishers.push(resolve); }),
    });
    return { loop, rooms, offer, finishers };
  }

  const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

  it('always (the default): every finished item starts a round', async () => {
    const { loop, rooms, offer, finishers } = await loopOf(undefined);
    try {
      await eventually(async () => rooms.length, (count) => count === 1, 2000);
      offer.push(1);
      loop.wake();
      await eventually(async () => finishers.length, (count) => count === 1, 2000);
      finishers[0]();
      await eventually(async () => rooms.length, (count) => count === 3, 2000);
    } finally {
      for (const finish of finishers) finish();
      await loop.stop();
    }
  });

  it('whenFull: a finished item starts a round only when the loop had no room', async () => {
    const { loop, rooms, offer, finishers } = await loopOf('whenFull');
    try {
      await eventually(async () => rooms.length, (count) => count === 1, 2000);
      offer.push(1);
      loop.wake();
      await eventually(async () => finishers.length, (count) => count === 1, 2000);
      const roundsWithRoom = rooms.length;
      finishers[0]();
      await settle();
      expect(rooms.length, 'room was left: no round').to.equal(roundsWithRoom);

      // Full: two items claimed, then the finish of one of them makes room, and a round takes the next.
      offer.push(1, 1, 1);
      loop.wake();
      await eventually(async () => finishers.length, (count) => count === 3, 2000);
      finishers[1]();
      await eventually(async () => finishers.length, (count) => count === 4, 2000);
    } finally {
      for (const finish of finishers) finish();
      await loop.stop();
    }
  });
});
