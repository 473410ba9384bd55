import { expect } from 'chai';
import { Circuit, CircuitOpenError, isOutage, memoryCircuitStore, type CircuitOptions, type CircuitStore } from '../../common/circuit';
import { capturingLogger } from '../harness';
import { rejectionOf } from '../media/fixtures';

/**
 * The circuit's state machine on its own: a clock the test moves, the jitter at its top (each pause
 * its full backoff step) unless said otherwise, and the log lines kept.
 */
class Down extends Error {}
class Refused extends Error {}
const isDown = (error: unknown) => error instanceof Down;

describe('circuit towards an outside service', () => {
  let now: number;
  let logs: ReturnType<typeof capturingLogger>;
  let reached: number[];

  beforeEach(() => {
    now = 1_000_000;
    logs = capturingLogger();
    reached = [];
  });

  function circuit(options: Partial<CircuitOptions> = {}): Circuit {
    return new Circuit({
      name: 'the service',
      settings: { failures: 3, pause: { baseMs: 1000, capMs: 8000 } },
      probeTimeoutMs: 5000,
      store: memoryCircuitStore(),
      log: logs.log,
      clock: () => now,
      random: () => 1,
      ...options,
    });
  }

  const warnings = () => logs.lines().filter((line) => line.level === 40).map((line) => line.msg);

  /** A call that reaches the service (noted) and fails as unavailable. */
  const failing = async () => {
    reached.push(now);
    throw new Down('no answer');
  };
  const answering = async () => {
    reached.push(now);
    return 'answer';
  };

  it('opens after N failures in a row; then calls fail at once without reaching the service', async () => {
    const breaker = circuit();
    for (let call = 0; call < 3; call += 1) expect(await rejectionOf(breaker.run(failing, isDown))).to.be.instanceOf(Down);
    const refused = await rejectionOf(breaker.run(failing, isDown));
    expect(refused).to.be.instanceOf(CircuitOpenError);
    expect((refused as CircuitOpenError).retryAt).to.equal(now + 1000);
    expect(reached).to.have.length(3);
    expect(warnings()).to.deep.equal(['the service unavailable: circuit open, calls fail fast until a probe gets an answer']);
  });

  it('counts failures in a row only: an answer in between starts the count again', async () => {
    const breaker = circuit();
    await rejectionOf(breaker.run(failing, isDown));
    await rejectionOf(breaker.run(failing, isDown));
    expect(await breaker.run(answering, isDown)).to.equal('answer');
    await rejectionOf(breaker.run(failing, isDown));
    await rejectionOf(breaker.run(failing, isDown));
    expect(await rejectionOf(breaker.run(failing, isDown))).to.be.instanceOf(Down);
    expect(reached).to.have.length(6);
    expect((await breaker.state()).state).to.equal('open');
  });

  it('a refusal the service answered is no failure: it never opens on those', async () => {
    const breaker = circuit();
    for (let call = 0; call < 5; call += 1) {
      expect(await rejectionOf(breaker.run(async () => { reached.push(now); throw new Refused('no'); }, isDown))).to.be.instanceOf(Refused);
    }
    expect(reached).to.have.length(5);
    expect((await breaker.state()).state).to.equal('closed');
    expect(warnings()).to.deep.equal([]);
  });

  it('after the pause one probe goes while the others still fail fast; its answer closes the circuit', async () => {
    const breaker = circuit();
    for (let call = 0; call < 3; call += 1) await rejectionOf(breaker.run(failing, isDown));
    now += 999;
    expect(await rejectionOf(breaker.run(answering, isDown))).to.be.instanceOf(CircuitOpenError);
    now += 1;
    let answer!: (value: string) => void;
    const probe = breaker.run(() => new Promise<string>((resolve) => { reached.push(now); answer = resolve; }), isDown);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await breaker.state()).state).to.equal('half_open');
    expect(await rejectionOf(breaker.run(answering, isDown))).to.be.instanceOf(CircuitOpenError);
    answer('back');
    expect(await probe).to.equal('back');
    expect((await breaker.state()).state).to.equal('closed');
    expect(await breaker.run(answering, isDown)).to.equal('answer');
    expect(reached).to.have.length(5);
    expect(warnings()).to.deep.equal([
      'the service unavailable: circuit open, calls fail fast until a probe gets an answer',
      'the service answers again: circuit closed',
    ]);
  });

  it('a failed probe opens it again for twice the pause, up to the cap, with no warning of its own', async () => {
    const breaker = circuit();
    for (let call = 0; call < 3; call += 1) await rejectionOf(breaker.run(failing, isDown));
    const pauses: number[] = [];
    for (let probe = 0; probe < 5; probe += 1) {
      const { retryAt } = await breaker.state();
      pauses.push(retryAt! - now);
      now = retryAt!;
      expect(await rejectionOf(breaker.run(failing, isDown))).to.be.instanceOf(Down);
    }
    expect(pauses).to.deep.equal([1000, 2000, 4000, 8000, 8000]);
    expect(warnings()).to.have.length(1);
    expect(logs.lines().filter((line) => line.msg === 'the service still unavailable: the probe failed')).to.have.length(5);
  });

  it('spreads each pause over the upper half of its step (jitter), so many callers do not probe at once', async () => {
    const seen = new Set<number>();
    for (let run = 0; run < 40; run += 1) {
      const breaker = circuit({ random: Math.random });
      for (let call = 0; call < 3; call += 1) await rejectionOf(breaker.run(failing, isDown));
      const pause = (await breaker.state()).retryAt! - now;
      expect(pause).to.be.within(500, 1000);
      seen.add(pause);
    }
    expect(seen.size).to.be.greaterThan(10);
  });

  it('a probe that never ends holds the others back only for its lease: then another caller probes', async () => {
    const breaker = circuit();
    for (let call = 0; call < 3; call += 1) await rejectionOf(breaker.run(failing, isDown));
    now += 1000;
    void breaker.run(() => new Promise<never>(() => { reached.push(now); }), isDown);
    await new Promise((resolve) => setImmediate(resolve));
    now += 4999;
    expect(await rejectionOf(breaker.run(answering, isDown))).to.be.instanceOf(CircuitOpenError);
    now += 1;
    expect(await breaker.run(answering, isDown)).to.equal('answer');
    expect((await breaker.state()).state).to.equal('closed');
    expect(reached).to.have.length(5);
  });

  it('backs off: a caller trying every 100 ms for a minute reaches a dead service a dozen times, not 600', async () => {
    const breaker = circuit();
    const start = now;
    for (; now < start + 60_000; now += 100) await rejectionOf(breaker.run(failing, isDown));
    const gaps = reached.slice(1).map((at, index) => at - reached[index]);
    // Three failures open it; then one probe per pause, doubling to the cap.
    expect(gaps).to.deep.equal([100, 100, 1000, 2000, 4000, 8000, 8000, 8000, 8000, 8000, 8000]);
    expect(warnings()).to.have.length(1);
  });

  it('two circuits over one store (two processes) count together and warn once between them', async () => {
    const store = memoryCircuitStore();
    const other = capturingLogger();
    const here = circuit({ store });
    const there = circuit({ store, log: other.log });
    await Promise.all([here, there, here, there].map((breaker) => rejectionOf(breaker.run(failing, isDown))));
    expect(await rejectionOf(there.run(answering, isDown))).to.be.instanceOf(CircuitOpenError);
    expect(await rejectionOf(here.run(answering, isDown))).to.be.instanceOf(CircuitOpenError);
    now += 1000;
    const probes = await Promise.allSettled([here, there, here, there].map((breaker) => breaker.run(answering, isDown)));
    expect(probes.filter((result) => result.status === 'fulfilled')).to.have.length(1);
    const allWarnings = [...logs.lines(), ...other.lines()].filter((line) => line.level === 40).map((line) => line.msg);
    expect(allWarnings).to.deep.equal([
      'the service unavailable: circuit open, calls fail fast until a probe gets an answer',
      'the service answers again: circuit closed',
    ]);
  });

  it('a store that cannot be read guards nothing: the call goes and its outcome stands', async () => {
    const broken: CircuitStore = { read: () => Promise.reject(new Error('database unreachable')), move: () => Promise.reject(new Error('database unreachable')) };
    const breaker = circuit({ store: broken });
    expect(await breaker.run(answering, isDown)).to.equal('answer');
    expect(await rejectionOf(breaker.run(failing, isDown))).to.be.instanceOf(Down);
    expect(warnings()).to.deep.equal([]);
  });

  it('isOutage: a failure a circuit counted, a call it refused, or an error caused by either', async () => {
    const breaker = circuit();
    const counted = await rejectionOf(breaker.run(failing, isDown));
    const answered = await rejectionOf(breaker.run(async () => { throw new Refused('no'); }, isDown));
    expect(isOutage(counted)).to.equal(true);
    expect(isOutage(new Error('wrapped', { cause: counted }))).to.equal(true);
    expect(isOutage(new CircuitOpenError('the service', now))).to.equal(true);
    expect(isOutage(answered)).to.equal(false);
    expect(isOutage(new Down('never through a circuit'))).to.equal(false);
  });
});
