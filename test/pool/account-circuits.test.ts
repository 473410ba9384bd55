import { expect } from 'chai';
import { leaseSlots } from '../../db/pool/lease-slots';
import { AccountCircuits } from '../../pool/account-circuits';
import { keyFingerprint, syncProviderAccounts } from '../../pool/accounts';
import { insertGeneration, waitingGenerations } from '../generation-fixtures';
import { makeUser } from '../users';
import { capturingLogger, resetDatabase, services } from '../harness';

describe('the circuit of a provider account', () => {
  const settings = { baseMs: 200, capMs: 1000, circuitFailures: 3 };
  let accountId: number;
  let otherId: number;
  let captured: ReturnType<typeof capturingLogger>;
  let circuits: AccountCircuits;
  const db = () => services().db;
  const account = () => db()('provider_accounts').where({ id: accountId }).first('failures', 'retry_at', 'circuit_opened_at', 'updated_at');
  const warnings = () => captured.lines().filter((line) => line.level === 40).map((line) => line.msg);

  beforeEach(async () => {
    await resetDatabase();
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'down-key', slots: 2 }, { kind: 'simulator', apiKey: 'up-key', slots: 2 }]);
    [accountId, otherId] = await Promise.all(['down-key', 'up-key'].map(async (key) => (await db()('provider_accounts').where({ key_fingerprint: keyFingerprint(key) }).first('id')).id));
    captured = capturingLogger();
    circuits = new AccountCircuits(db(), captured.log, settings);
  });

  it('backs off after each failure, doubling to the cap with jitter: no slot of the account is leased before its retry', async () => {
    const delays = [await circuits.pollFailed(accountId), await circuits.pollFailed(accountId)];
    expect(delays[0]).to.be.within(100, 200);
    expect(delays[1]).to.be.within(200, 400);
    expect(await account()).to.include({ failures: 2, circuit_opened_at: null });
    const [generation] = await waitingGenerations(1);
    const leases = await leaseSlots(db(), [generation], 60);
    expect(leases.map((lease) => lease.accountId)).to.deep.equal([otherId], 'the failing account waits for its retry');
    expect(warnings()).to.deep.equal([], 'a failure below the threshold is no warning');
  });

  it('opens once at the threshold, however many callers fail at once, with one warning; answered, closes with one warning', async () => {
    const others = [new AccountCircuits(db(), captured.log, settings), new AccountCircuits(db(), captured.log, settings)];
    const delays = await Promise.all(Array.from({ length: 9 }, (_, index) => [circuits, ...others][index % 3].pollFailed(accountId)));
    expect(Math.max(...delays)).to.be.at.most(settings.capMs * 1.5);
    const opened = await account();
    expect(opened.failures).to.equal(9);
    expect(opened.circuit_opened_at).to.be.instanceOf(Date);
    expect(warnings()).to.have.length(1);
    expect(warnings()[0]).to.match(/circuit open/);

    await Promise.all([circuits, ...others].map((circuit) => circuit.answered(accountId)));
    expect(await account()).to.include({ failures: 0, retry_at: null, circuit_opened_at: null });
    expect(warnings()).to.have.length(2);
    expect(warnings()[1]).to.match(/circuit closed/);
  });

  it('lets one caller probe an open circuit once its retry is due, the others wait for the outcome', async () => {
    for (let index = 0; index < settings.circuitFailures; index += 1) await circuits.failed(accountId);
    expect((await circuits.mayCall(accountId)).go, 'before the retry: nobody').to.equal(false);
    await db()('provider_accounts').where({ id: accountId }).update({ retry_at: db().fn.now() });
    const calls = await Promise.all(Array.from({ length: 6 }, () => circuits.mayCall(accountId)));
    expect(calls.filter((call) => call.go)).to.have.length(1);
    for (const waiting of calls.filter((call) => !call.go)) expect(waiting.retryInMs).to.be.within(settings.capMs - 100, settings.capMs * 1.5);
    // The probe failed: the next one after the backoff of that many failures.
    await circuits.failed(accountId);
    expect((await circuits.mayCall(accountId)).go).to.equal(false);
  });

  /** Tasks processing on the account, their polls due in `dueInMs` from now each (null: under a poll). */
  async function tasksOnAccount(dueInMs: (number | null)[]): Promise<string[]> {
    const user = await makeUser({ guest: true });
    const ids: string[] = [];
    for (const inMs of dueInMs) {
      const id = await insertGeneration(user.id, 'processing');
      await db()('generations').where({ id }).update({
        provider_account_id: accountId,
        provider_task_id: `task-${ids.length}`,
        next_poll_at: db().raw("now() + ? * interval '1 millisecond'", [inMs ?? 30_000]),
        claimed_by: inMs === null ? db().raw('gen_random_uuid()') : null,
      });
      ids.push(id);
    }
    return ids;
  }

  /** In how many ms each task's poll is due, in the order of `ids`. */
  async function dueInMs(ids: string[]): Promise<number[]> {
    const rows: { id: string; in_ms: number }[] = await db()('generations').whereIn('id', ids)
      .select('id', db().raw('extract(epoch from next_poll_at - now()) * 1000 as in_ms'));
    return ids.map((id) => Number(rows.find((row) => row.id === id)!.in_ms));
  }

  it('after a poll\'s failed probe, brings the deferred polls to the retry in the order they were deferred, the prober after them: the probes go round the tasks; a submission\'s moves none', async () => {
    for (let index = 0; index < settings.circuitFailures; index += 1) await circuits.failed(accountId);
    // Deferred until after the probe's hold, in this order; the prober is under its poll.
    const [second, first, prober, third] = await tasksOnAccount([settings.capMs + 150, settings.capMs + 120, null, settings.capMs + 180]);
    await circuits.failed(accountId);
    expect((await dueInMs([first]))[0], 'a submission\'s failed probe moves no poll').to.be.above(settings.capMs);
    const comesBackInMs = await circuits.pollFailed(accountId);
    const { retry_in_ms: retryInMs } = await db()('provider_accounts').where({ id: accountId })
      .first(db().raw('extract(epoch from retry_at - now()) * 1000 as retry_in_ms'));
    const [firstIn, secondIn, thirdIn, proberIn] = await dueInMs([first, second, third, prober]);
    expect(firstIn).to.be.within(Number(retryInMs) - 50, Number(retryInMs) + 5);
    expect(secondIn, 'in the order they were deferred').to.be.above(firstIn);
    expect(thirdIn).to.be.above(secondIn).and.below(Number(retryInMs) + settings.baseMs / 2);
    expect(proberIn, 'a task under its poll is left to its poller').to.be.above(20_000);
    expect(comesBackInMs, 'the prober comes back after the others').to.be.within(Number(retryInMs) + settings.baseMs / 2, Number(retryInMs) + settings.baseMs);
  });

  it('brings the deferred polls forward once when many calls fail at once, in every process, without one waiting on another', async () => {
    for (let index = 0; index < settings.circuitFailures; index += 1) await circuits.failed(accountId);
    const deferred = await tasksOnAccount(Array.from({ length: 30 }, (_, index) => 5 * settings.capMs + index * 10));
    const processes = [circuits, new AccountCircuits(db(), captured.log, settings), new AccountCircuits(db(), captured.log, settings)];
    await Promise.all(Array.from({ length: 12 }, (_, index) => processes[index % 3].pollFailed(accountId)));
    // Each came to the retry of one of the failures (at most the cap) and its half step.
    for (const inMs of await dueInMs(deferred)) expect(inMs).to.be.below(settings.capMs + settings.baseMs / 2);
  });

  it('keeps the deferred tasks in the order they came while a probe is held, and brings them to now when the probe is answered', async () => {
    for (let index = 0; index < settings.circuitFailures; index += 1) await circuits.failed(accountId);
    await db()('provider_accounts').where({ id: accountId }).update({ retry_at: db().fn.now() });
    expect((await circuits.mayCall(accountId)).go, 'the probe').to.equal(true);
    const cameAt = Date.now();
    const early = await circuits.mayCall(accountId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const lateAt = Date.now();
    const late = await circuits.mayCall(accountId);
    expect([early.go, late.go]).to.deep.equal([false, false]);
    expect(lateAt + late.retryInMs, 'the one that came later comes back later').to.be.above(cameAt + early.retryInMs);
    expect(early.retryInMs).to.be.within(settings.capMs - 100, settings.capMs + settings.baseMs);

    const now = Date.now();
    const deferred = await tasksOnAccount([cameAt + early.retryInMs - now, lateAt + late.retryInMs - now]);
    await circuits.answered(accountId, true);
    const [earlyIn, lateIn] = await dueInMs(deferred);
    expect(earlyIn).to.be.within(-50, 5);
    expect(lateIn).to.be.above(earlyIn).and.below(settings.baseMs);
    expect(warnings().filter((message) => /circuit closed/.test(String(message)))).to.have.length(1);
  });

  it('writes nothing when an account that never failed answers', async () => {
    const before = await db()('provider_accounts').where({ id: otherId }).first('updated_at', 'failures');
    const written: string[] = [];
    const watch = (query: { sql: string }) => written.push(query.sql);
    db().on('query', watch);
    try {
      await circuits.answered(otherId);
      await circuits.answered(otherId, false);
    } finally {
      db().off('query', watch);
    }
    expect(written).to.deep.equal([], 'no statement at all: the hot path of every poll and submission');
    expect(await db()('provider_accounts').where({ id: otherId }).first('updated_at', 'failures')).to.deep.equal(before);
  });
});
