import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { jwtVerify } from 'jose';
import nock from 'nock';
import { FcmSender } from '../../../clients/push/fcm';
import { RetryableError } from '../../../clients/push/retry';
import type { PushMessage } from '../../../clients/push/push-sender';
import { rejectionOf } from '../../media/fixtures';
import { Circuit, CircuitOpenError, isOutage, memoryCircuitStore } from '../../../common/circuit';
import { capturingLogger, memoryCircuit, silentLogger } from '../../harness';

/**
 * The FCM HTTP v1 sender against FCM's documented answers (nock): the service-account JWT and its
 * exchange for an access token, `messages:send`, dead tokens, retryable errors with Retry-After,
 * and a 401 that refreshes the access token once.
 */
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const account = {
  projectId: 'effects-test',
  clientEmail: 'push@effects-test.iam.gserviceaccount.com',
  privateKey,
  tokenUri: 'https://oauth2.googleapis.com/token',
};
const sendPath = '/v1/projects/effects-test/messages:send';
const message: PushMessage = {
  token: 'fcm-token-1',
  platform: 'android',
  title: 'Готово!',
  body: 'Ваш результат готов',
  data: { generation_id: 'g-1', status: 'succeeded', error_code: '' },
};

function fcmError(code: number, status: string, details: object[] = []) {
  return { error: { code, message: `${status} for the test`, status, details } };
}

const fcmDetail = (errorCode: string) => ({ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode });

describe('push gateway: FCM HTTP v1', () => {
  let waits: number[];
  let exchanges: string[];
  let tokenNumber: number;

  function sender(retry: Partial<{ attempts: number; maxWaitMs: number; random: () => number }> = {}, circuit = memoryCircuit()) {
    return new FcmSender({
      ...account,
      // The jitter's top unless told otherwise: each wait is its full backoff step.
      retry: { attempts: 3, baseDelayMs: 100, maxWaitMs: 10_000, random: () => 1, ...retry, sleep: async (ms) => { waits.push(ms); } },
      circuit,
      timeoutMs: 2000,
      log: silentLogger(),
    });
  }

  /** The token endpoint: each exchange hands out a new access token and keeps the assertion. */
  function tokenEndpoint(times = 1) {
    return nock('https://oauth2.googleapis.com').post('/token').times(times).reply(200, (_uri, body) => {
      const form = new URLSearchParams(body as string);
      expect(form.get('grant_type')).to.equal('urn:ietf:params:oauth:grant-type:jwt-bearer');
      exchanges.push(form.get('assertion')!);
      tokenNumber += 1;
      return { access_token: `access-${tokenNumber}`, expires_in: 3599, token_type: 'Bearer' };
    });
  }

  const fcm = () => nock('https://fcm.googleapis.com');

  before(() => nock.disableNetConnect());
  beforeEach(() => {
    waits = [];
    exchanges = [];
    tokenNumber = 0;
  });
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    expect(pending, 'every mocked answer was asked for').to.deep.equal([]);
  });
  after(() => nock.enableNetConnect());

  it('sends {token, notification, data} with an access token from a signed service-account JWT, reused while valid', async () => {
    tokenEndpoint();
    const bodies: unknown[] = [];
    fcm().post(sendPath).times(2).matchHeader('authorization', 'Bearer access-1').reply(200, (_uri, body) => {
      bodies.push(body);
      return { name: 'projects/effects-test/messages/0:1' };
    });
    const gateway = sender();
    expect(await gateway.send(message)).to.equal('sent');
    expect(await gateway.send({ ...message, token: 'fcm-token-2' })).to.equal('sent');

    expect(bodies[0]).to.deep.equal({
      message: { token: 'fcm-token-1', notification: { title: 'Готово!', body: 'Ваш результат готов' }, data: message.data },
    });
    expect(exchanges).to.have.length(1);
    const { payload, protectedHeader } = await jwtVerify(exchanges[0], publicKey, {
      algorithms: ['RS256'],
      issuer: account.clientEmail,
      audience: account.tokenUri,
    });
    expect(protectedHeader.alg).to.equal('RS256');
    expect(payload.scope).to.equal('https://www.googleapis.com/auth/firebase.messaging');
    expect(payload.exp! - payload.iat!).to.equal(3600);
  });

  it('exchanges again once the access token is within a minute of expiring', async () => {
    nock('https://oauth2.googleapis.com').post('/token').reply(200, () => {
      exchanges.push('short-lived');
      return { access_token: 'access-short', expires_in: 45, token_type: 'Bearer' };
    });
    tokenEndpoint();
    fcm().post(sendPath).matchHeader('authorization', 'Bearer access-short').reply(200, { name: 'projects/effects-test/messages/0:6' });
    fcm().post(sendPath).matchHeader('authorization', 'Bearer access-1').reply(200, { name: 'projects/effects-test/messages/0:7' });
    const gateway = sender();
    expect(await gateway.send(message)).to.equal('sent');
    expect(await gateway.send(message)).to.equal('sent');
    expect(exchanges).to.have.length(2);
  });

  it('404 UNREGISTERED: the token is dead', async () => {
    tokenEndpoint();
    fcm().post(sendPath).reply(404, fcmError(404, 'NOT_FOUND', [fcmDetail('UNREGISTERED')]));
    expect(await sender().send(message)).to.equal('invalid_token');
  });

  it('400 INVALID_ARGUMENT about the token: the token is dead', async () => {
    tokenEndpoint();
    fcm().post(sendPath).reply(400, fcmError(400, 'INVALID_ARGUMENT', [fcmDetail('INVALID_ARGUMENT')]));
    expect(await sender().send(message)).to.equal('invalid_token');
  });

  it('400 INVALID_ARGUMENT about another field: the message is wrong, an error, not retried, the token kept', async () => {
    tokenEndpoint();
    fcm().post(sendPath).once().reply(400, fcmError(400, 'INVALID_ARGUMENT', [{
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'message.data[0].value', description: 'Invalid value' }],
    }]));
    const error = await rejectionOf(sender().send(message));
    expect(error).not.to.be.instanceOf(RetryableError);
    expect(error.message).to.contain('400 INVALID_ARGUMENT');
    expect(waits).to.deep.equal([]);
  });

  it('429 QUOTA_EXCEEDED with Retry-After: waits as long as asked, then sends', async () => {
    tokenEndpoint();
    fcm().post(sendPath).reply(429, fcmError(429, 'RESOURCE_EXHAUSTED', [fcmDetail('QUOTA_EXCEEDED')]), { 'Retry-After': '7' });
    fcm().post(sendPath).reply(200, { name: 'projects/effects-test/messages/0:2' });
    expect(await sender().send(message)).to.equal('sent');
    expect(waits).to.deep.equal([7000]);
  });

  it('a Retry-After longer than the sender may wait fails the send at once, retryable (the job retries later)', async () => {
    tokenEndpoint();
    fcm().post(sendPath).reply(429, fcmError(429, 'RESOURCE_EXHAUSTED', [fcmDetail('QUOTA_EXCEEDED')]), { 'Retry-After': '120' });
    const error = await rejectionOf(sender({ maxWaitMs: 10_000 }).send(message));
    expect(error).to.be.instanceOf(RetryableError);
    expect(waits).to.deep.equal([]);
  });

  it('503 UNAVAILABLE every time: tried three times with doubling backoff, then a retryable error', async () => {
    tokenEndpoint();
    fcm().post(sendPath).times(3).reply(503, fcmError(503, 'UNAVAILABLE', [fcmDetail('UNAVAILABLE')]));
    const error = await rejectionOf(sender().send(message));
    expect(error).to.be.instanceOf(RetryableError);
    expect(error.message).to.contain('503');
    expect(waits).to.deep.equal([100, 200]);
  });

  it('spreads the waits between tries (jitter): each in the upper half of its doubling step', async () => {
    const seen: number[][] = [];
    for (let send = 0; send < 8; send += 1) {
      waits = [];
      tokenEndpoint();
      fcm().post(sendPath).times(3).reply(503, fcmError(503, 'UNAVAILABLE'));
      await rejectionOf(sender({ random: Math.random }).send(message));
      expect(waits).to.have.length(2);
      expect(waits[0]).to.be.within(50, 100);
      expect(waits[1]).to.be.within(100, 200);
      seen.push(waits);
    }
    expect(new Set(seen.map((pair) => pair.join())).size).to.be.greaterThan(1);
  });

  it('a gateway that keeps failing opens its circuit: sends then fail at once without reaching FCM, a probe after the pause closes it; one warning each way', async () => {
    let now = 1_000_000;
    const logs = capturingLogger();
    const gateway = sender({}, new Circuit({
      name: 'push gateway FCM',
      settings: { failures: 4, pause: { baseMs: 1000, capMs: 1000 } },
      probeTimeoutMs: 5000,
      store: memoryCircuitStore(),
      log: logs.log,
      clock: () => now,
      random: () => 1,
    }));
    tokenEndpoint();
    fcm().post(sendPath).times(4).reply(503, fcmError(503, 'UNAVAILABLE', [fcmDetail('UNAVAILABLE')]));

    expect(await rejectionOf(gateway.send(message))).to.be.instanceOf(RetryableError);
    // The fourth failure in a row opens it: the send's next try is refused, not slept on again.
    const opened = await rejectionOf(gateway.send(message));
    expect(opened).to.be.instanceOf(CircuitOpenError);
    expect(isOutage(opened)).to.equal(true);
    expect(await rejectionOf(gateway.send(message))).to.be.instanceOf(CircuitOpenError);
    expect(waits).to.deep.equal([100, 200, 100]);

    now += 1000;
    fcm().post(sendPath).reply(200, { name: 'projects/effects-test/messages/0:8' });
    expect(await gateway.send(message)).to.equal('sent');
    expect(logs.lines().filter((line) => line.level === 40).map((line) => line.msg)).to.deep.equal([
      'push gateway FCM unavailable: circuit open, calls fail fast until a probe gets an answer',
      'push gateway FCM answers again: circuit closed',
    ]);
  });

  it('a network error or a 500 is retried like a 503', async () => {
    tokenEndpoint();
    fcm().post(sendPath).replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    fcm().post(sendPath).reply(500, fcmError(500, 'INTERNAL', [fcmDetail('INTERNAL')]));
    fcm().post(sendPath).reply(200, { name: 'projects/effects-test/messages/0:3' });
    expect(await sender().send(message)).to.equal('sent');
    expect(waits).to.deep.equal([100, 200]);
  });

  it('401: refreshes the access token once and sends again with the new one', async () => {
    tokenEndpoint(2);
    fcm().post(sendPath).matchHeader('authorization', 'Bearer access-1').reply(401, fcmError(401, 'UNAUTHENTICATED'));
    fcm().post(sendPath).matchHeader('authorization', 'Bearer access-2').reply(200, { name: 'projects/effects-test/messages/0:4' });
    expect(await sender().send(message)).to.equal('sent');
    expect(exchanges).to.have.length(2);
    expect(waits).to.deep.equal([]);
  });

  it('a second 401 right after a refresh is an error (the account lacks the permission), not a loop', async () => {
    tokenEndpoint(2);
    fcm().post(sendPath).times(2).reply(401, fcmError(401, 'UNAUTHENTICATED'));
    const error = await rejectionOf(sender().send(message));
    expect(error.message).to.contain('401');
    expect(error).not.to.be.instanceOf(RetryableError);
  });

  it('a token endpoint that is down is retried; one that refuses the key is an error', async () => {
    nock('https://oauth2.googleapis.com').post('/token').reply(503, 'busy');
    tokenEndpoint();
    fcm().post(sendPath).reply(200, { name: 'projects/effects-test/messages/0:5' });
    expect(await sender().send(message)).to.equal('sent');
    expect(waits).to.deep.equal([100]);

    nock('https://oauth2.googleapis.com').post('/token').reply(400, { error: 'invalid_grant' });
    const error = await rejectionOf(sender().send(message));
    expect(error.message).to.contain('invalid_grant');
    expect(error).not.to.be.instanceOf(RetryableError);
  });

  it('403 SENDER_ID_MISMATCH (a token of another Firebase project) is dead for this one', async () => {
    tokenEndpoint();
    fcm().post(sendPath).reply(403, fcmError(403, 'PERMISSION_DENIED', [fcmDetail('SENDER_ID_MISMATCH')]));
    expect(await sender().send(message)).to.equal('invalid_token');
  });
});
