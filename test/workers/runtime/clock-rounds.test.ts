import { expect } from 'chai';
import { secondsUntilNextDue } from '../../../db/subscriptions/claim-due-subscriptions';
import { secondsUntilNextSettlement } from '../../../db/user-effects/claim-due-earnings';
import { clockRounds, clockSleepMs } from '../../../workers/runtime/clock-rounds';
import { startSubscriptionClock } from '../../../workers/subscriptions/clock';
import { startEarningSettlement } from '../../../workers/user-effects/settlement';
import { resetDatabase, services } from '../../harness';
import { earningOf } from '../../user-effect-fixtures';
import { makeUser } from '../../users';

describe('clock loops (the subscription clock, the earning settlement)', () => {
  beforeEach(() => resetDatabase());

  it('sleep until the next row is due, at most their longest sleep; again at once after a full round', async () => {
    const rounds = (seconds: number | null) => clockRounds(5000, async () => seconds);
    expect(await rounds(null)({ claimed: 0, room: 8, roomLeft: 8 }), 'nothing waits').to.equal(5000);
    expect(await rounds(0)({ claimed: 0, room: 8, roomLeft: 8 }), 'one is due now').to.equal(0);
    expect(await rounds(1.2)({ claimed: 3, room: 8, roomLeft: 5 })).to.equal(1200);
    expect(await rounds(60)({ claimed: 0, room: 8, roomLeft: 8 })).to.equal(5000);
    expect(await rounds(null)({ claimed: 8, room: 8, roomLeft: 0 }), 'a full round').to.equal(0);
    expect(await rounds(0)({ claimed: 0, room: 0, roomLeft: 0 }), 'every slot busy: a finished one wakes it').to.equal(5000);
    expect([clockSleepMs(86_400), clockSleepMs(2), clockSleepMs(0.1)]).to.deep.equal([5000, 200, 50]);
  });

  it('nothing waiting is null, not "due now"', async () => {
    const { db } = services();
    expect(await secondsUntilNextDue(db)).to.equal(null);
    expect(await secondsUntilNextSettlement(db)).to.equal(null);
    await earningOf((await makeUser()).id, { settlesInS: 30 });
    expect(await secondsUntilNextSettlement(db)).to.be.within(28, 30);
  });

  it('with nothing to do, neither loop keeps asking the database', async () => {
    const base = services();
    const idle = { ...base, config: { ...base.config, billingDayS: 86_400 } };
    const statements: string[] = [];
    const count = (query: { sql: string }) => {
      if (/user_effect_earnings|subscriptions/.test(query.sql)) statements.push(query.sql);
    };
    base.db.on('query', count);
    const loops = [await startSubscriptionClock(idle), await startEarningSettlement(idle)];
    try {
      await new Promise((resolve) => setTimeout(resolve, 1500));
    } finally {
      for (const loop of loops) await loop.stop();
      base.db.off('query', count);
    }
    // One round each at the start, then a sleep of 5 s: the subscription clock's batch of due renewals,
    // its claim and its look at the next moment; the settlement's claim and look.
    expect(statements.length).to.be.within(2, 5);
  });
});
