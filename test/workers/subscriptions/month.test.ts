import { expect } from 'chai';
import type { Knex } from 'knex';
import { credit, debit } from '../../../db/credits/ledger';
import type { PlanRow } from '../../../db/subscriptions/model';
import type { RunningPart } from '../../../services';
import { startPushSend } from '../../../workers/push/push-send';
import { RecordingPushSender } from '../../../clients/push/push-sender';
import { startSubscriptionClock } from '../../../workers/subscriptions/clock';
import { startSubscriptionRenewals } from '../../../workers/subscriptions/renewal';
import { expectLedgerConsistent } from '../../accounts';
import { services } from '../../harness';
import { startTestbed, type Testbed } from '../../payment-testbed';
import { expectPlanBucketsConsistent } from '../../plan-buckets';
import { activeSubscription, freshPlans, operatorOnFirstOrder, subscriptionRow, waitForSubscription } from '../../subscription-fixtures';
import { makeUser } from '../../users';

/**
 * A whole month in about half a minute: BILLING_DAY_S=1, the scheduler's clock, the worker's
 * renewal charges and push sending running as in production (in this process), the processor
 * simulator over HTTP with its webhook. A monthly and a weekly subscription of one user live side by
 * side; the weekly one renews four times, one of them after a decline and a retry.
 */
describe('subscriptions: a month in seconds (BILLING_DAY_S=1)', function () {
  this.timeout(90_000);
  let bed: Testbed;
  let plans: Record<string, PlanRow>;
  let db: Knex;
  let parts: RunningPart[];
  let sender: RecordingPushSender;

  before(async () => {
    bed = await startTestbed({ config: { BILLING_DAY_S: '1' } });
    db = services().db;
    ({ plans } = await freshPlans());
    sender = new RecordingPushSender(services().log);
    const app = bed.app.services;
    parts = [await startSubscriptionClock(app), await startSubscriptionRenewals(app), await startPushSend(app, sender)];
  });
  after(async () => {
    for (const part of parts.reverse()) await part.stop();
    await bed.close();
  });

  it('renews, reminds, burns and grants on time, each once per period, and recovers from a declined charge', async () => {
    const user = await makeUser({ locale: 'en' });
    const [device] = await db('push_devices').insert({ user_id: user.id, token: 'month-test-token', platform: 'android' }).returning('id');
    const month = await activeSubscription(bed, user, plans.plan_month.id);
    const week = await activeSubscription(bed, user, plans.plan_week.id);
    expect(month.current_period_end!.getTime() - month.current_period_start!.getTime()).to.equal(30_000);
    expect(week.current_period_end!.getTime() - week.current_period_start!.getTime()).to.equal(7_000);

    // 100 spent at once: from the weekly plan's credits, which burn first.
    await db.transaction((trx) => debit(trx, { userId: user.id, kind: 'reserve', amount: 100, reference: 'generation-a' }));
    const [reserve] = await db('credit_transactions').where({ user_id: user.id, kind: 'reserve' }).select('plan_share');
    const weekBucket = await db('plan_credit_buckets').where({ payment_id: week.payment_id }).first('id');
    expect(reserve.plan_share).to.deep.equal([{ bucket: weekBucket.id, amount: 100 }]);

    // The first weekly renewal keeps the anchor: the second period starts where the first ended.
    const second = await waitForSubscription(week.id, (row) => row.period === 2, 12_000);
    expect(second.current_period_start!.getTime()).to.equal(week.current_period_end!.getTime());
    // Its refund now comes after the weekly period burned: returned and burned at once.
    await db.transaction((trx) => credit(trx, { userId: user.id, kind: 'refund', amount: 100, reference: 'generation-a' }));
    const refundRows = await db('credit_transactions').where({ user_id: user.id, reference: 'generation-a' }).orderBy('seq').select('kind', 'amount');
    expect(refundRows).to.deep.equal([{ kind: 'reserve', amount: -100 }, { kind: 'refund', amount: 100 }, { kind: 'plan_expired', amount: -100 }]);

    // The next weekly charge is declined: past_due, retried one billing day after the period end.
    expect(await operatorOnFirstOrder(bed, week.id, 'decline-next')).to.equal(200);
    await waitForSubscription(week.id, (row) => row.status === 'past_due', 12_000);
    const recovered = await waitForSubscription(week.id, (row) => row.period === 3 && row.status === 'active', 5000);
    expect(recovered.current_period_start!.getTime()).to.be.above(second.current_period_end!.getTime() + 900);

    // The month ends: its reminders came 3 and 1 billing days before, then it renews.
    await waitForSubscription(month.id, (row) => row.period === 2, 40_000);
    const weekNow = await subscriptionRow(week.id);
    expect(weekNow.period).to.be.at.least(4);

    const monthLog = await db('push_log').where({ kind: 'subscription_reminder', device_id: device.id }).andWhere('reference', 'like', `${month.id}:%`).orderBy('sent_at').select('reference', 'data', 'sent_at');
    expect(monthLog.map((row) => row.reference)).to.deep.equal([`${month.id}:1:3`, `${month.id}:1:1`]);
    expect(monthLog.map((row) => row.data.days_left)).to.deep.equal(['3', '1']);
    expect(monthLog[0].sent_at.getTime()).to.be.closeTo(month.current_period_end!.getTime() - 3000, 1500);
    expect(monthLog[1].sent_at.getTime()).to.be.closeTo(month.current_period_end!.getTime() - 1000, 1500);
    expect(sender.sent.filter((message) => message.data.subscription_id === month.id).map((message) => message.title)).to.deep.equal(['Subscription', 'Subscription']);

    // Every ended weekly period: reminded 3 and 1 days before its end, once each.
    const weekReminders = await db('subscription_reminders').where({ subscription_id: week.id }).select('period', 'days_left');
    for (let period = 1; period < weekNow.period; period += 1) {
      expect(weekReminders.filter((row) => row.period === period).map((row) => row.days_left).sort(), `period ${period}`).to.deep.equal([1, 3]);
    }

    // Each period paid once, granted once, burned once (the current one still open).
    for (const subscription of [await subscriptionRow(month.id), weekNow]) {
      const paid = await db('payments').where({ subscription_id: subscription.id, status: 'succeeded' }).orderBy('period').select('id', 'period');
      expect(paid.map((row) => row.period)).to.deep.equal(Array.from({ length: subscription.period }, (_, index) => index + 1));
      const grants = await db('credit_transactions').where({ user_id: user.id, kind: 'plan_grant' }).whereIn('reference', paid.map((row) => row.id));
      expect(grants).to.have.length(subscription.period);
      const buckets = await db('plan_credit_buckets').where({ subscription_id: subscription.id }).orderBy('created_at').select('burned_at');
      expect(buckets.map((bucket) => bucket.burned_at === null)).to.deep.equal([...Array(subscription.period - 1).fill(false), true]);
    }
    expect(await db('payments').where({ subscription_id: week.id, status: 'failed' })).to.have.length(1);

    // The month's leftovers burned at its end, before the second grant.
    const monthRows = await db('credit_transactions').where({ user_id: user.id }).whereIn('reference', [month.payment_id]).orderBy('seq').select('kind', 'amount');
    expect(monthRows).to.deep.equal([{ kind: 'plan_grant', amount: 700 }, { kind: 'plan_expired', amount: -700 }]);
    await expectLedgerConsistent();
    await expectPlanBucketsConsistent();
  });
});
