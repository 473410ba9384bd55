import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SubscriptionRow } from '../../../db/subscriptions/model';
import { startRole } from '../../../scripts/bench-processes';
import { expectLedgerConsistent } from '../../accounts';
import { serviceEnv, services } from '../../harness';
import { credentials, notificationSecret, startTestbed, type Testbed } from '../../payment-testbed';
import { expectPlanBucketsConsistent } from '../../plan-buckets';
import { activeSubscription, freshPlans, periodEndsIn } from '../../subscription-fixtures';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobsOf } from '../../jobs';

describe('subscriptions: two schedulers and two workers renew a batch exactly once', function () {
  this.timeout(180_000);
  let bed: Testbed;
  let dataDir: string;
  const roles: Awaited<ReturnType<typeof startRole>>[] = [];

  before(async () => {
    bed = await startTestbed();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-subscriptions-'));
    chmodSync(dataDir, 0o755);
  });
  after(async () => {
    for (const role of roles) if (role.child.exitCode === null) role.child.kill('SIGKILL');
    await bed.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('each due period is charged once, granted once and burned once; each due reminder is sent once', async () => {
    const { plans } = await freshPlans();
    const { db } = services();
    const renewing: SubscriptionRow[] = [];
    const reminded: SubscriptionRow[] = [];
    for (let index = 0; index < 40; index += 1) {
      const user = await makeUser();
      const subscription = await activeSubscription(bed, user, plans.plan_week.id);
      if (index % 2 === 0) renewing.push(subscription);
      else {
        await db('push_devices').insert({ user_id: user.id, token: `processes-token-${index}`, platform: 'ios' });
        reminded.push(subscription);
      }
    }
    // All due at the same moment: periods that end now, and periods half a billing day from their end.
    for (const subscription of renewing) await periodEndsIn(subscription.id, 0);
    for (const subscription of reminded) await periodEndsIn(subscription.id, 43_200);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...serviceEnv(),
      PUBLIC_BASE_URL: bed.app.url,
      PAYMENT_PROCESSOR_URL: `${bed.app.url}/sim/processor`,
      PAYMENT_PROCESSOR_LOGIN: credentials.userName,
      PAYMENT_PROCESSOR_PASSWORD: credentials.password,
      PAYMENT_NOTIFICATION_SECRET: notificationSecret,
      // The workers never reach the AI provider here.
      PROVIDER_URL: 'http://127.0.0.1:9',
      DATA_DIR: dataDir,
    };
    roles.push(...await Promise.all([startRole('scheduler', env), startRole('scheduler', env), startRole('worker', env), startRole('worker', env)]));

    await eventually(async () => {
      const [{ renewed }] = await db('subscriptions').whereIn('id', renewing.map((row) => row.id)).andWhere({ period: 2, status: 'active' }).count<{ renewed: number }[]>('* as renewed');
      const [{ sent }] = await db('push_log').where({ kind: 'subscription_reminder' }).count<{ sent: number }[]>('* as sent');
      return renewed === renewing.length && sent === reminded.length;
    }, Boolean, 90_000);

    for (const subscription of renewing) {
      const renewals = await db('payments').where({ subscription_id: subscription.id, period: 2 }).select('id', 'status', 'attempt');
      expect(renewals, 'one charge for the period').to.have.length(1);
      expect(renewals[0]).to.include({ status: 'succeeded', attempt: 1 });
      const orders = [...bed.simulator.orders.values()].filter((order) => order.clientId === subscription.user_id);
      expect(orders.map((order) => [order.orderNumber, order.status]), 'one order charged per period at the processor').to.deep.equal([[subscription.payment_id, 2], [renewals[0].id, 2]]);
      const rows = await db('credit_transactions').where({ user_id: subscription.user_id }).orderBy('seq').select('kind', 'amount', 'reference');
      expect(rows, 'granted, burned, granted: each once').to.deep.equal([
        { kind: 'plan_grant', amount: 150, reference: subscription.payment_id },
        { kind: 'plan_expired', amount: -150, reference: subscription.payment_id },
        { kind: 'plan_grant', amount: 150, reference: renewals[0].id },
      ]);
      expect(await jobsOf('subscription-renew', { paymentId: renewals[0].id })).to.have.length(1);
    }
    for (const subscription of reminded) {
      expect(await db('subscription_reminders').where({ subscription_id: subscription.id }).pluck('days_left')).to.deep.equal([1]);
      expect(await db('push_log').where({ kind: 'subscription_reminder', user_id: subscription.user_id })).to.have.length(1);
      expect((await db('subscriptions').where({ id: subscription.id }).first('status', 'period'))).to.deep.equal({ status: 'active', period: 1 });
    }
    await expectLedgerConsistent();
    await expectPlanBucketsConsistent();

    const exits = roles.map((role) => new Promise((resolve) => role.child.once('exit', resolve)));
    for (const role of roles) role.child.kill('SIGTERM');
    expect(await Promise.all(exits)).to.deep.equal([0, 0, 0, 0]);
  });
});
