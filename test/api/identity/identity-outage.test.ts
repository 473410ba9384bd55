import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { seal } from '../../../db/accounts/sealed-secret';
import { enqueue } from '../../../db/queues';
import { startIdpBRevocation } from '../../../workers/accounts/revoke-idp-b';
import { expectError, type Api } from '../../accounts';
import { client } from '../../client';
import { capturingLogger, resetDatabase, startTestApp, type TestApp } from '../../harness';
import { eventually } from '../../../scripts/wait';
import { startFakeOpenIdProvider, startFakeUserinfo, type FakeOpenIdProvider, type FakeUserinfo } from './fake-providers';
import { testSigner, type TestSigner } from './identity-tokens';
import { jobsOf } from '../../jobs';

/**
 * An identity provider that is down, with the circuits of one web process (CIRCUIT_FAILURES 3, a
 * pause of 1.5 to 3 s): sign-ins keep the contract's `503 provider_unavailable`, at once once the
 * circuit is open; the worker's revocations fail their jobs at once too, and the log has one
 * warning when the circuit opens and one when it closes, not one per sign-in or job.
 */
describe('identity providers that are down: the circuit of each', () => {
  let openId: FakeOpenIdProvider;
  let userinfo: FakeUserinfo;
  let signer: TestSigner;
  let app: TestApp;
  let api: Api;
  let logs: ReturnType<typeof capturingLogger>;
  let startLines: number;

  before(async () => {
    openId = await startFakeOpenIdProvider(() => signer.jwks, { id: 'svc.outage', secret: 'outage-secret' });
    signer = await testSigner(openId.url, 'svc.outage');
    userinfo = await startFakeUserinfo();
  });
  beforeEach(async () => {
    await resetDatabase();
    openId.down = false;
    logs = capturingLogger();
    app = await startTestApp({
      log: logs.log,
      config: {
        IDP_B_ISSUER: openId.url,
        IDP_B_AUDIENCE: 'svc.outage',
        IDP_B_JWKS_URL: `${openId.url}/jwks`,
        IDP_B_REVOKE_URL: `${openId.url}/revoke`,
        IDP_B_CLIENT_ID: 'svc.outage',
        IDP_B_CLIENT_SECRET: 'outage-secret',
        IDP_C_USERINFO_URL: `${userinfo.url}/userinfo`,
        IDP_TIMEOUT_MS: '2000',
        CIRCUIT_FAILURES: '3',
        CIRCUIT_PAUSE_MS: '3000',
        CIRCUIT_MAX_PAUSE_MS: '3000',
      },
    });
    api = client(app.url);
    startLines = logs.lines().length;
  });
  afterEach(() => app.close());
  after(async () => {
    await openId.close();
    await userinfo.close();
  });

  /** Warnings since the app started (its start has its own). */
  const warnings = () => logs.lines().slice(startLines).filter((line) => Number(line.level) >= 40).map((line) => line.msg);

  it('idp_c failing: three sign-ins reach it, the next answer 503 without reaching it; after the pause one gets through and closes the circuit', async () => {
    const circuit = `identity provider idp_c ${userinfo.url}`;
    const before = userinfo.requests;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expectError(await api.post('/v1/auth/idp_c', { access_token: 'boom', oauth_provider: 'btn_1' }), 503, 'provider_unavailable');
    }
    expect(userinfo.requests - before).to.equal(3);
    userinfo.profiles.set('token-c', { sub: 'c-person', name: 'Cee' });
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expectError(await api.post('/v1/auth/idp_c', { access_token: 'token-c', oauth_provider: 'btn_1' }), 503, 'provider_unavailable');
    }
    expect(userinfo.requests - before).to.equal(3);
    expect(warnings()).to.deep.equal([`${circuit} unavailable: circuit open, calls fail fast until a probe gets an answer`]);

    const { retryAt } = await app.services.circuits.of(circuit, 0).state();
    await sleep(retryAt! - Date.now() + 20);
    const signedIn = await api.post('/v1/auth/idp_c', { access_token: 'token-c', oauth_provider: 'btn_1' });
    expect(signedIn.status, signedIn.text).to.equal(200);
    expect(userinfo.requests - before).to.equal(4);
    expect(warnings()).to.deep.equal([
      `${circuit} unavailable: circuit open, calls fail fast until a probe gets an answer`,
      `${circuit} answers again: circuit closed`,
    ]);
  });

  it('idp_b down: its revocation jobs fail at once once the circuit is open, back off with a cap, and the log has one warning, not one per job', async () => {
    openId.down = true;
    const { db, boss, config } = app.services;
    await db.transaction(async (trx) => {
      for (let grant = 0; grant < 5; grant += 1) await enqueue(boss, trx, 'revoke-idp-b', { sealedRefreshToken: seal(config.tokenSecret, `grant-${grant}`) });
    });
    const before = openId.requests;
    const revocation = await startIdpBRevocation(app.services);
    let jobs: Awaited<ReturnType<typeof jobsOf<'revoke-idp-b'>>>;
    try {
      jobs = await eventually(
        () => jobsOf('revoke-idp-b'),
        (rows) => rows.length === 5 && rows.every((row) => row.state === 'retry'),
        15_000,
      );
    } finally {
      await revocation.stop();
    }
    expect(openId.requests - before).to.equal(3);
    expect(openId.revocations).to.deep.equal([]);
    expect(warnings()).to.deep.equal([`identity provider idp_b ${openId.url} unavailable: circuit open, calls fail fast until a probe gets an answer`]);
    expect(logs.lines().filter((line) => line.msg === 'revoke-idp-b job failed; pg-boss retries it')).to.have.length(5);
    // pg-boss's own backoff (jitter included) brings each back later, never later than the cap.
    for (const job of jobs) {
      expect(job).to.include({ retryBackoff: true, retryDelayMax: 3600 });
      expect(job.startAfter.getTime()).to.be.above(Date.now() + 20_000);
    }
  });
});
