import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import nock from 'nock';
import { createPushSender, startPushSend } from '../../../workers/push/push-send';
import { pushSenderFromConfig } from '../../../clients/push/from-config';
import { Circuits } from '../../../common/circuit';
import { PlatformPushSender } from '../../../clients/push/platform-router';
import { RecordingPushSender } from '../../../clients/push/push-sender';
import { succeedGeneration } from '../../../db/generations/succeed-generation';
import { earningTerms } from '../../../db/user-effects/record-earning';
import type { RunningPart } from '../../../services';
import { capturingLogger, resetDatabase, services, testConfig } from '../../harness';
import { insertGeneration } from '../../generation-fixtures';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { apnsIdentity, localCa, startFakeApns, type FakeApns } from './fake-apns';
import { jobsOf } from '../../jobs';

/**
 * A terminal generation's push, end to end: the pipeline's push-send job, the platform router from
 * config, FCM (nock) for Android and APNs (a local HTTP/2 server) for iOS. A dead token forgets its
 * device; a gateway that keeps failing fails the job, whose retry reaches only the device it missed.
 */
const { privateKey: googleKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const serviceAccount = JSON.stringify({
  type: 'service_account',
  project_id: 'effects-test',
  private_key_id: 'k1',
  private_key: googleKey.export({ type: 'pkcs8', format: 'pem' }),
  client_email: 'push@effects-test.iam.gserviceaccount.com',
  token_uri: 'https://oauth2.googleapis.com/token',
});
const sendPath = '/v1/projects/effects-test/messages:send';

function gatewayEnv(apns: FakeApns | null): Record<string, string> {
  return {
    FCM_SERVICE_ACCOUNT_JSON: serviceAccount,
    ...(apns ? {
      // As an operator pastes a .p8 into one line: literal \n for the line breaks.
      APNS_KEY: String(apns.privateKey.export({ type: 'pkcs8', format: 'pem' })).replace(/\n/g, '\\n'),
      APNS_KEY_ID: apnsIdentity.keyId,
      APNS_TEAM_ID: apnsIdentity.teamId,
      APNS_TOPIC: apnsIdentity.topic,
      APNS_ENVIRONMENT: 'sandbox',
    } : {}),
  };
}

async function addDevice(userId: string, token: string, platform: 'ios' | 'android'): Promise<string> {
  const [row] = await services().db('push_devices').insert({ user_id: userId, token, platform }).returning('id');
  return row.id;
}

describe('push through the real gateways (FCM and APNs), end to end', function () {
  this.timeout(30_000);
  let apns: FakeApns;
  let worker: RunningPart | null = null;

  before(async () => {
    apns = await startFakeApns();
    nock.disableNetConnect();
    nock.enableNetConnect((host) => host.startsWith('127.0.0.1') || host.startsWith('localhost'));
  });
  after(async () => {
    await apns.close();
    nock.enableNetConnect();
  });
  beforeEach(() => resetDatabase());
  afterEach(async () => {
    await worker?.stop();
    worker = null;
    nock.cleanAll();
  });

  it('chooses the gateways from config: none, one, or both', () => {
    const none = capturingLogger();
    expect(createPushSender({ config: testConfig(), log: none.log, circuits: services().circuits })).to.be.instanceOf(RecordingPushSender);
    expect(none.lines().map((line) => line.msg).join('\n')).to.contain('only logged');

    const fcmOnly = capturingLogger();
    const sender = createPushSender({ config: testConfig(gatewayEnv(null)), log: fcmOnly.log, circuits: services().circuits });
    expect(sender).to.be.instanceOf(PlatformPushSender);
    expect(sender.name).to.equal('android:fcm,ios:recording');
    expect(fcmOnly.lines().find((line) => line.level === 40)).to.include({ platform: 'ios' });

    expect(createPushSender({ config: testConfig(gatewayEnv(apns)), log: fcmOnly.log, circuits: services().circuits }).name).to.equal('android:fcm,ios:apns');
  });

  it('delivers to Android and iOS, forgets a dead token, and retries only the device a failing gateway missed', async () => {
    const config = testConfig(gatewayEnv(apns));
    const sender = pushSenderFromConfig(config.push, services().log, new Circuits({ settings: config.circuits, log: services().log }), { apnsOrigin: apns.origin, apnsCa: localCa, sleep: async () => {} });
    worker = await startPushSend(services(), sender);

    const user = await makeUser({ locale: 'en' });
    await addDevice(user.id, 'fcm-ok', 'android');
    const dead = await addDevice(user.id, 'fcm-dead', 'android');
    const iosOk = await addDevice(user.id, 'ios-ok', 'ios');
    const iosFlaky = await addDevice(user.id, 'ios-flaky', 'ios');
    // Every try inside the sender fails for this device, so the first job run fails; its retry gets through.
    apns.script('ios-flaky', { status: 503, reason: 'ServiceUnavailable' }, { status: 503 }, { status: 503 }, { status: 200 });

    nock('https://oauth2.googleapis.com').post('/token').reply(200, { access_token: 'access-1', expires_in: 3599 });
    const fcmBodies: { message: { token: string; notification: object; data: object } }[] = [];
    nock('https://fcm.googleapis.com')
      .post(sendPath, (body) => body.message.token === 'fcm-ok').once().reply(200, (_uri, body) => {
        fcmBodies.push(body as (typeof fcmBodies)[number]);
        return { name: 'projects/effects-test/messages/1' };
      })
      .post(sendPath, (body) => body.message.token === 'fcm-dead').once()
      .reply(404, { error: { code: 404, status: 'NOT_FOUND', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }] } });

    const id = await insertGeneration(user.id, 'processing');
    await services().db('generations').where({ id }).update({ result_key: `results/${id}.png` });
    const { db, boss } = services();
    expect(await db.transaction((trx) => succeedGeneration(trx, boss, { generationId: id, preview: null }, earningTerms(services().config)))).to.equal(true);

    const pushLog = () => db('push_log').where({ kind: 'generation', reference: id }).select('device_id', 'platform', 'title');
    // First run: Android and the healthy iPhone get it, the dead token is forgotten, the job fails.
    const job = await eventually(
      async () => (await jobsOf('push-send', { reference: id }))[0],
      (row) => row?.state === 'retry',
      10_000,
    );
    expect((await pushLog()).map((row) => row.platform).sort()).to.deep.equal(['android', 'ios']);
    expect(await db('push_devices').where({ id: dead }).first()).to.equal(undefined);

    // The job's own retry (10 s later in production) is brought forward.
    await services().boss.update('push-send', undefined, { id: job.id, startAfter: new Date() });
    const rows = await eventually(pushLog, (found) => found.length === 3, 10_000);
    expect(rows.map((row) => row.device_id)).to.include.members([iosOk, iosFlaky]);
    expect(rows.every((row) => row.title === 'Ready!')).to.equal(true);

    // Nobody got it twice: one FCM send and one APNs delivery per device.
    const apnsTokens = apns.requests.map((request) => request.token);
    expect(apnsTokens.filter((token) => token === 'ios-ok')).to.have.length(1);
    expect(apnsTokens.filter((token) => token === 'ios-flaky')).to.have.length(4);
    expect(fcmBodies).to.have.length(1);
    expect(fcmBodies[0].message).to.deep.include({ token: 'fcm-ok', notification: { title: 'Ready!', body: 'Your result is ready: open the app to see it.' } });
    expect(fcmBodies[0].message.data).to.deep.equal({ generation_id: id, status: 'succeeded', error_code: '' });
    expect(apns.requests.find((request) => request.token === 'ios-ok')!.body).to.deep.include({ generation_id: id, status: 'succeeded' });
    expect(nock.pendingMocks()).to.deep.equal([]);
    await eventually(() => boss.getJobById('push-send', job.id), (found) => found?.state === 'completed');
  });
});
