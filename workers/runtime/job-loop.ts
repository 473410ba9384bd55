import type { Channel, ChannelPayloads } from '../../db/channels';
import type { RunningPart, Services } from '../../services';
import { Wakeup } from './wakeup';

/**
 * The one loop every consumer of the worker roles runs on (the dispatcher, the poll loop, the queue
 * consumers). A round claims at most the room left under `concurrency` (and `batchSize`), hands each
 * item to `handle` on its own, and goes again at once after a full round; otherwise it sleeps until
 * `idleMs` passed, a handled item finishes (see `roundAfterItem`), a NOTIFY of `wakeOn` arrives through the process's
 * LISTEN hub (which also wakes it after a lost connection is back), or `wake()` is called. Stopping
 * claims nothing more and lets the items in flight finish.
 */
export interface JobLoop<Item> {
  /** For logs: `dispatch`, `poll`, a queue's name. */
  name: string;
  /** Items handled at once in this process. */
  concurrency: number;
  /** At most this many claimed per round; the whole room by default. */
  batchSize?: number;
  /**
   * Claims up to `room` items, or none: whatever it returns is handled. `room` may be 0 (every
   * slot busy), for a loop that does other work between rounds.
   */
  claim(room: number): Promise<Item[]>;
  /** Handles one item; what it throws is logged (a handler records its own failures). */
  handle(item: Item): Promise<void>;
  /** How long to sleep between rounds when nothing is pressing. */
  idleMs: number;
  /**
   * How long to sleep after a round that claimed `claimed` of `room` (`roomLeft` is free now);
   * by default 0 after a full round, else `idleMs`.
   */
  nextRoundInMs?(round: { claimed: number; room: number; roomLeft: number }): number | Promise<number>;
  /** NOTIFY channels that mean work, each with an optional test of its payload. */
  wakeOn?: WakeOn[];
  /** The loop's wake-up, when something outside it must be able to wake it from the start. */
  wakeup?: Wakeup;
  /**
   * When a finished item starts a round at once: \`always\` (the default: it may have left work
   * behind), or \`whenFull\`: only when it made room in a loop that had none (the handler wakes the
   * loop itself when its outcome means work).
   */
  roundAfterItem?: 'always' | 'whenFull';
}

export type WakeOn = { [C in Channel]: { channel: C; when?: (payload: ChannelPayloads[C]) => boolean } }[Channel];

export interface RunningLoop extends RunningPart {
  /** Look for work now. */
  wake(): void;
}

export async function startJobLoop<Item>(services: Pick<Services, 'log' | 'listenHub'>, loop: JobLoop<Item>): Promise<RunningLoop> {
  const { log, listenHub } = services;
  const wakeup = loop.wakeup ?? new Wakeup();
  const wake = () => wakeup.wake();
  const inFlight = new Set<Promise<void>>();
  let stopped = false;

  const unsubscribes = await Promise.all((loop.wakeOn ?? []).map(({ channel, when }) => listenHub.subscribe(channel, null, {
    notify: (payload) => { if (!when || (when as (payload: unknown) => boolean)(payload)) wake(); },
    resync: wake,
  })));

  const track = (item: Item) => {
    const work = loop.handle(item).catch((error: unknown) => log.error({ err: error, loop: loop.name }, `${loop.name}: an item failed`));
    inFlight.add(work);
    void work.finally(() => {
      const wasFull = inFlight.size >= loop.concurrency;
      inFlight.delete(work);
      if (wasFull || loop.roundAfterItem !== 'whenFull') wake();
    });
  };

  const nextRoundInMs = async (claimed: number, room: number): Promise<number> => {
    const roomLeft = loop.concurrency - inFlight.size;
    if (loop.nextRoundInMs) return loop.nextRoundInMs({ claimed, room, roomLeft });
    return room > 0 && claimed >= room ? 0 : loop.idleMs;
  };

  const running = (async () => {
    while (!stopped) {
      let waitMs = loop.idleMs;
      try {
        const room = Math.max(0, Math.min(loop.concurrency - inFlight.size, loop.batchSize ?? Infinity));
        const items = await loop.claim(room);
        for (const item of items) track(item);
        waitMs = await nextRoundInMs(items.length, room);
      } catch (error) {
        log.error({ err: error, loop: loop.name }, `${loop.name} round failed`);
      }
      await wakeup.wait(waitMs);
    }
  })();

  return {
    wake,
    stop: async () => {
      stopped = true;
      for (const unsubscribe of unsubscribes) unsubscribe();
      wake();
      await running;
      await Promise.allSettled([...inFlight]);
    },
  };
}
