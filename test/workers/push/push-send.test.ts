import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { failGeneration } from '../../../db/generations/fail-generation';
import { succeedGeneration } from '../../../db/generations/succeed-generation';
import { earningTerms } from '../../../db/user-effects/record-earning';
import type { RunningPart } from '../../../services';
import { generationPush, subscriptionReminderPush } from '../../../db/push/push-job';
import { sendPush, startPushSend } from '../../../workers/push/push-send';
import { RecordingPushSender, type PushMessage, type PushOutcome, type PushSender } from '../../../clients/push/push-sender';
import { insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

async function addDevice(userId: string, token: string, platform: 'ios' | 'android' = 'ios'): Promise<string> {
  const [row] = await services().db('push_devices').insert({ user_id: userId, token, platform }).returning('id');
  return row.id;
}

function pushLog(reference: string) {
  return services().db('push_log').where({ kind: 'generation', reference }).orderBy('device_id');
}

describe('push for terminal generation statuses (push-send jobs)', function () {
  this.timeout(20_000);
  let worker: RunningPart;
  let sender: RecordingPushSender;

  before(async () => {
    sender = new RecordingPushSender(services().log);
    worker = await startPushSend(services(), sender);
  });
  after(() => worker.stop());
  beforeEach(() => resetDatabase());

  it('sends succeeded to every device of the user, in the user\'s language, when the pipeline marks it', async () => {
    const user = await makeUser({ locale: 'ru' });
    const devices = [await addDevice(user.id, 'ios-token'), await addDevice(user.id, 'android-token', 'android')];
    const stranger = await makeUser();
    await addDevice(stranger.id, 'stranger-token');
    const id = await insertGeneration(user.id, 'processing');
    await services().db('generations').where({ id }).update({ result_key: `results/${id}.png` });

    const { db, boss } = services();
    expect(await db.transaction((trx) => succeedGeneration(trx, boss, { generationId: id, preview: null }, earningTerms(services().config)))).to.equal(true);

    const rows = await eventually(() => pushLog(id), (found) => found.length === 2);
    expect(rows.map((row) => row.device_id).sort()).to.deep.equal([...devices].sort());
    for (const row of rows) {
      expect(row).to.include({ user_id: user.id, title: 'Готово!' });
      expect(row.data).to.deep.equal({ generation_id: id, status: 'succeeded', error_code: '' });
    }
    expect(sender.sent.filter((message) => message.data.generation_id === id).map((message) => message.token).sort())
      .to.deep.equal(['android-token', 'ios-token']);
  });

  it('sends an early failed (straight from pending) with its error code, in English for an `en` user', async () => {
    const user = await makeUser({ locale: 'en' });
    const device = await addDevice(user.id, 'en-token');
    const id = await insertGeneration(user.id, 'pending');
    const { db, boss } = services();
    await db.transaction((trx) => failGeneration(trx, boss, { generationId: id, from: 'pending', errorCode: 'bad_input_image' }));

    const [row] = await eventually(() => pushLog(id), (found) => found.length === 1);
    expect(row).to.include({ device_id: device, platform: 'ios', title: 'Something went wrong' });
    expect(row.data).to.deep.equal({ generation_id: id, status: 'failed', error_code: 'bad_input_image' });
  });

  it('completes the job for a user without devices, sending nothing', async () => {
    const user = await makeUser();
    const generationId = randomUUID();
    const jobId = await services().boss.send('push-send', generationPush({ userId: user.id, generationId, status: 'failed', errorCode: 'safety' }));
    await eventually(() => services().boss.getJobById('push-send', jobId!), (job) => job?.state === 'completed');
    expect(await pushLog(generationId)).to.have.length(0);
  });

  describe('sending (without the queue)', () => {
    class ScriptedSender implements PushSender {
      readonly name = 'scripted';
      readonly tokens: string[] = [];
      constructor(private readonly answer: (message: PushMessage) => PushOutcome | Error) {}
      async send(message: PushMessage): Promise<PushOutcome> {
        this.tokens.push(message.token);
        const outcome = this.answer(message);
        if (outcome instanceof Error) throw outcome;
        return outcome;
      }
    }

    it('a retry after a partial failure reaches only the devices not reached yet', async () => {
      const user = await makeUser();
      await addDevice(user.id, 'good-token');
      await addDevice(user.id, 'flaky-token');
      const job = generationPush({ userId: user.id, generationId: randomUUID(), status: 'succeeded', errorCode: null });
      let gatewayDown = true;
      const flaky = new ScriptedSender((message) => (message.token === 'flaky-token' && gatewayDown ? new Error('gateway 503') : 'sent'));

      let failure: unknown = null;
      await sendPush(services().db, flaky, job, services().log).catch((error: unknown) => (failure = error));
      expect(failure).to.be.instanceOf(Error);
      expect(await pushLog(job.reference)).to.have.length(1);

      gatewayDown = false;
      flaky.tokens.length = 0;
      expect(await sendPush(services().db, flaky, job, services().log)).to.equal(1);
      expect(flaky.tokens).to.deep.equal(['flaky-token']);
      expect(await pushLog(job.reference)).to.have.length(2);
    });

    it('forgets a device whose token the gateway reports invalid', async () => {
      const user = await makeUser();
      const stale = await addDevice(user.id, 'uninstalled-token');
      const kept = await addDevice(user.id, 'live-token');
      const gateway = new ScriptedSender((message) => (message.token === 'uninstalled-token' ? 'invalid_token' : 'sent'));
      const sent = await sendPush(services().db, gateway, generationPush({ userId: user.id, generationId: randomUUID(), status: 'failed', errorCode: 'safety' }), services().log);
      expect(sent).to.equal(1);
      expect(await services().db('push_devices').where({ user_id: user.id }).pluck('id')).to.deep.equal([kept]);
      expect(stale).not.to.equal(kept);
    });

    it('ignores a job for a non-terminal status, an unknown kind or days left, or an unknown shape', async () => {
      const user = await makeUser();
      await addDevice(user.id, 'token');
      const gateway = new ScriptedSender(() => 'sent');
      const reminder = subscriptionReminderPush({ userId: user.id, subscriptionId: randomUUID(), period: 1, daysLeft: 3 });
      for (const job of [
        generationPush({ userId: user.id, generationId: randomUUID(), status: 'processing' as never, errorCode: null }),
        { ...reminder, data: { ...reminder.data, days_left: '2' } },
        { ...reminder, kind: 'effect_earned' },
        { ...reminder, data: { days_left: 3 } },
        { userId: user.id },
        null,
      ]) {
        expect(await sendPush(services().db, gateway, job, services().log), JSON.stringify(job)).to.equal(0);
      }
      expect(gateway.tokens).to.deep.equal([]);
    });

    it('sends a subscription reminder with its data as strings, in the user\'s language, once per device', async () => {
      const user = await makeUser({ locale: 'en' });
      await addDevice(user.id, 'reminded-token', 'android');
      const gateway = new ScriptedSender(() => 'sent');
      const subscriptionId = randomUUID();
      const job = subscriptionReminderPush({ userId: user.id, subscriptionId, period: 2, daysLeft: 1 });
      expect(await sendPush(services().db, gateway, job, services().log)).to.equal(1);
      expect(await sendPush(services().db, gateway, job, services().log)).to.equal(0);
      const rows = await services().db('push_log').where({ kind: 'subscription_reminder' });
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ reference: `${subscriptionId}:2:1`, title: 'Subscription' });
      expect(rows[0].body).to.contain('tomorrow');
      expect(rows[0].data).to.deep.equal({ subscription_id: subscriptionId, status: 'period_ending', days_left: '1' });
    });

    it('sends a job queued in the shape of the version before push kinds as a generation push', async () => {
      const user = await makeUser({ locale: 'ru' });
      await addDevice(user.id, 'old-job-token');
      const gateway = new ScriptedSender(() => 'sent');
      const generationId = randomUUID();
      expect(await sendPush(services().db, gateway, { userId: user.id, generationId, status: 'failed', errorCode: 'safety' }, services().log)).to.equal(1);
      const [row] = await pushLog(generationId);
      expect(row).to.include({ title: 'Не получилось' });
      expect(row.data).to.deep.equal({ generation_id: generationId, status: 'failed', error_code: 'safety' });
    });
  });
});
