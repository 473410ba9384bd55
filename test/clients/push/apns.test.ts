import { expect } from 'chai';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { ApnsSender } from '../../../clients/push/apns';
import { RetryableError } from '../../../clients/push/retry';
import type { PushMessage } from '../../../clients/push/push-sender';
import { memoryCircuit, silentLogger } from '../../harness';
import { rejectionOf } from '../../media/fixtures';
import { apnsIdentity, localCa, startFakeApns, type FakeApns } from './fake-apns';

/**
 * The APNs sender against a local HTTP/2 server over TLS that speaks Apple's documented answers and
 * checks the provider token's signature and claims.
 */
const message: PushMessage = {
  token: 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90',
  platform: 'ios',
  title: 'Ready!',
  body: 'Your result is ready',
  data: { generation_id: 'g-1', status: 'succeeded', error_code: '' },
};

describe('push gateway: APNs over HTTP/2', () => {
  let apns: FakeApns;
  let waits: number[];
  const senders: ApnsSender[] = [];

  before(async () => {
    apns = await startFakeApns();
  });
  after(() => apns.close());
  beforeEach(() => {
    waits = [];
    apns.requests.length = 0;
  });
  afterEach(async () => {
    for (const sender of senders.splice(0)) await sender.close();
  });

  function sender(origin = apns.origin): ApnsSender {
    const created = new ApnsSender({
      ...apnsIdentity,
      privateKey: apns.privateKey,
      environment: 'sandbox',
      origin,
      ca: localCa,
      // The jitter's top: each wait is its full backoff step.
      retry: { attempts: 3, baseDelayMs: 100, maxWaitMs: 10_000, sleep: async (ms) => { waits.push(ms); }, random: () => 1 },
      circuit: memoryCircuit(),
      timeoutMs: 2000,
      log: silentLogger(),
    });
    senders.push(created);
    return created;
  }

  it('POSTs /3/device/<token> with the topic, the alert push type, a signed provider token, and {aps, ...data}', async () => {
    expect(await sender().send(message)).to.equal('sent');
    const [request] = apns.requests;
    expect(request.token).to.equal(message.token);
    expect(request.headers['apns-topic']).to.equal('app.effects.test');
    expect(request.headers['apns-push-type']).to.equal('alert');
    expect(request.body).to.deep.equal({
      generation_id: 'g-1', status: 'succeeded', error_code: '',
      aps: { alert: { title: 'Ready!', body: 'Your result is ready' }, sound: 'default' },
    });
    expect(decodeProtectedHeader(request.jwt)).to.deep.equal({ alg: 'ES256', kid: 'KEY1234567' });
    const claims = decodeJwt(request.jwt);
    expect(claims.iss).to.equal('TEAM123456');
    expect(claims.iat).to.be.within(Date.now() / 1000 - 5, Date.now() / 1000 + 1);
  });

  it('reuses one HTTP/2 session and one provider token for many sends, and reconnects when the session ends', async () => {
    const gateway = sender();
    const before = apns.sessions;
    await Promise.all([1, 2, 3].map((index) => gateway.send({ ...message, token: `token-${index}` })));
    await gateway.send(message);
    expect(apns.sessions - before).to.equal(1);
    expect(new Set(apns.requests.map((request) => request.jwt)).size).to.equal(1);

    apns.dropSessions();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await gateway.send(message)).to.equal('sent');
    expect(apns.sessions - before).to.equal(2);
  });

  for (const [status, reason] of [[410, 'Unregistered'], [410, 'ExpiredToken'], [400, 'BadDeviceToken'], [400, 'DeviceTokenNotForTopic']] as const) {
    it(`${status} ${reason}: the token is dead`, async () => {
      apns.script(`dead-${reason}`, { status, reason });
      expect(await sender().send({ ...message, token: `dead-${reason}` })).to.equal('invalid_token');
      expect(apns.requests).to.have.length(1);
    });
  }

  it('429 TooManyRequests, 503 and a reset stream are retried with backoff until one gets through', async () => {
    apns.script('busy', { status: 429, reason: 'TooManyRequests' }, { status: 503, reason: 'ServiceUnavailable' }, { status: 200 });
    expect(await sender().send({ ...message, token: 'busy' })).to.equal('sent');
    expect(waits).to.deep.equal([100, 200]);

    waits.length = 0;
    apns.script('flaky', 'hang-up', { status: 200 });
    expect(await sender().send({ ...message, token: 'flaky' })).to.equal('sent');
    expect(waits).to.deep.equal([100]);
  });

  it('honours a Retry-After, and gives up (retryable) after the last try', async () => {
    apns.script('down', { status: 500, reason: 'InternalServerError', retryAfter: '2' });
    const error = await rejectionOf(sender().send({ ...message, token: 'down' }));
    expect(error).to.be.instanceOf(RetryableError);
    expect(waits).to.deep.equal([2000, 2000]);
    expect(apns.requests).to.have.length(3);
  });

  it('429 TooManyProviderTokenUpdates is retried', async () => {
    apns.script('updates', { status: 429, reason: 'TooManyProviderTokenUpdates' }, { status: 200 });
    expect(await sender().send({ ...message, token: 'updates' })).to.equal('sent');
  });

  it('403 ExpiredProviderToken: signs a new provider token once and sends again', async () => {
    apns.script('stale', { status: 403, reason: 'ExpiredProviderToken' }, { status: 200 });
    expect(await sender().send({ ...message, token: 'stale' })).to.equal('sent');
    expect(apns.requests).to.have.length(2);
    expect(apns.requests[0].jwt).not.to.equal(apns.requests[1].jwt);
    expect(waits).to.deep.equal([]);
  });

  it('a refused key or a bad payload is an error, not retried', async () => {
    apns.script('too-big', { status: 413, reason: 'PayloadTooLarge' });
    const error = await rejectionOf(sender().send({ ...message, token: 'too-big' }));
    expect(error).not.to.be.instanceOf(RetryableError);
    expect(error.message).to.contain('PayloadTooLarge');
    expect(apns.requests).to.have.length(1);

    const wrongKey = new ApnsSender({
      ...apnsIdentity, keyId: 'OTHERKEY00', privateKey: apns.privateKey, environment: 'sandbox', origin: apns.origin, ca: localCa,
      retry: { attempts: 3, baseDelayMs: 0, maxWaitMs: 0 }, circuit: memoryCircuit(), timeoutMs: 2000, log: silentLogger(),
    });
    senders.push(wrongKey);
    expect((await rejectionOf(wrongKey.send(message))).message).to.contain('InvalidProviderToken');
  });

  it('a gateway that cannot be reached is a retryable error after every try', async () => {
    const closed = await startFakeApns();
    const origin = closed.origin;
    await closed.close();
    const error = await rejectionOf(sender(origin).send(message));
    expect(error).to.be.instanceOf(RetryableError);
    expect(waits).to.deep.equal([100, 200]);
  });

  it('trusts only a real certificate chain: a server the CA does not vouch for is refused', async () => {
    const untrusting = new ApnsSender({
      ...apnsIdentity, privateKey: apns.privateKey, environment: 'sandbox', origin: apns.origin,
      retry: { attempts: 1, baseDelayMs: 0, maxWaitMs: 0 }, circuit: memoryCircuit(), timeoutMs: 2000, log: silentLogger(),
    });
    senders.push(untrusting);
    const error = await rejectionOf(untrusting.send(message));
    expect(error.message).to.match(/self[- ]signed|certificate/i);
    expect(apns.requests).to.have.length(0);
  });
});
