import { expect } from 'chai';
import { HandOverFirst } from '../../../workers/generations/hand-over-first';

/** A promise settled from outside. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((done, fail) => {
    resolve = done;
    reject = fail;
  });
  return { promise, resolve, reject };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** ms from now until `work` settles. */
async function msUntil(work: Promise<unknown>): Promise<number> {
  const started = Date.now();
  await work;
  return Date.now() - started;
}

describe('hand-overs before result copies (workers/generations/hand-over-first.ts)', () => {
  it('lets a claim go at once when no hand-over is under way and none was ever made', async () => {
    const gate = new HandOverFirst({ lullMs: 5_000, maxWaitMs: 10_000 });
    expect(await msUntil(gate.handOversDone())).to.be.below(1000);
  });

  it('holds a claim until the rounds and submissions under way have ended, failed ones included', async () => {
    const gate = new HandOverFirst({ lullMs: 0, maxWaitMs: 10_000 });
    const round = deferred();
    const submission = deferred();
    void gate.track(round.promise);
    gate.handOver(submission.promise).catch(() => undefined);
    let released = false;
    const claim = gate.handOversDone().then(() => {
      released = true;
    });
    round.resolve();
    await sleep(20);
    expect(released, 'one submission still runs').to.equal(false);
    submission.reject(new Error('provider unreachable'));
    await claim;
    expect(released).to.equal(true);
  });

  it('waits for a round that starts in the same turn as the claim (both woken by one NOTIFY)', async () => {
    const gate = new HandOverFirst({ lullMs: 0, maxWaitMs: 10_000 });
    const round = deferred();
    let released = false;
    const claim = gate.handOversDone().then(() => {
      released = true;
    });
    void gate.track(round.promise);
    await sleep(20);
    expect(released).to.equal(false);
    round.resolve();
    await claim;
  });

  it('after a submission ends, holds a claim for the lull, counted from that end', async () => {
    const gate = new HandOverFirst({ lullMs: 200, maxWaitMs: 10_000 });
    const submission = deferred();
    void gate.handOver(submission.promise);
    await sleep(150);
    const claim = gate.handOversDone();
    submission.resolve();
    const ended = Date.now();
    await claim;
    // The 150 ms the submission ran count for nothing: the lull starts at its end.
    expect(Date.now() - ended).to.be.at.least(190).and.below(2000);

    // Once the lull has passed, a claim goes at once.
    expect(await msUntil(gate.handOversDone())).to.be.below(150);
  });

  it('with no generation waiting in line, holds a claim for what is under way but not for the lull (a lone generation)', async () => {
    const gate = new HandOverFirst({ lullMs: 1_500, maxWaitMs: 10_000 });
    await gate.handOver(Promise.resolve());
    gate.lineMayWait = false;
    expect(await msUntil(gate.handOversDone())).to.be.below(700);

    const submission = deferred();
    void gate.handOver(submission.promise);
    let released = false;
    const claim = gate.handOversDone().then(() => {
      released = true;
    });
    await sleep(20);
    expect(released, 'the submission still runs').to.equal(false);
    submission.resolve();
    expect(await msUntil(claim)).to.be.below(700);

    // Generations wait again: the lull is back.
    gate.lineMayWait = true;
    await gate.handOver(Promise.resolve());
    expect(await msUntil(gate.handOversDone())).to.be.at.least(1_400);
  });

  it('a round that ends makes no lull: only submissions do (a round that claimed nothing hands no slot over)', async () => {
    const gate = new HandOverFirst({ lullMs: 5_000, maxWaitMs: 10_000 });
    const round = deferred();
    void gate.track(round.promise);
    const claim = gate.handOversDone();
    round.resolve();
    expect(await msUntil(claim)).to.be.below(1000);
  });

  it('a submission that starts during the lull starts it again', async () => {
    const gate = new HandOverFirst({ lullMs: 200, maxWaitMs: 10_000 });
    await gate.handOver(Promise.resolve());
    const claim = gate.handOversDone();
    await sleep(120);
    const next = deferred();
    void gate.handOver(next.promise);
    await sleep(30);
    next.resolve();
    const ended = Date.now();
    await claim;
    expect(Date.now() - ended).to.be.at.least(190).and.below(2000);
  });

  it('never waits longer than its limit, whatever is under way or starts meanwhile', async () => {
    const stuck = new HandOverFirst({ lullMs: 0, maxWaitMs: 50 });
    void stuck.track(new Promise(() => undefined));
    expect(await msUntil(stuck.handOversDone())).to.be.at.least(45).and.below(1000);

    const busy = new HandOverFirst({ lullMs: 100, maxWaitMs: 300 });
    // A submission every 40 ms: never a lull of 100 ms.
    void busy.handOver(sleep(10));
    const flow = setInterval(() => void busy.handOver(sleep(10)), 40);
    try {
      expect(await msUntil(busy.handOversDone())).to.be.at.least(290).and.below(2000);
    } finally {
      clearInterval(flow);
    }
  });

  it('hands back what it tracks, result or error', async () => {
    const gate = new HandOverFirst({ lullMs: 0, maxWaitMs: 10 });
    expect(await gate.track(Promise.resolve(7))).to.equal(7);
    expect(await gate.handOver(Promise.resolve(8))).to.equal(8);
    const error = await gate.handOver(Promise.reject(new Error('refused'))).then(() => null, (thrown: Error) => thrown);
    expect(error?.message).to.equal('refused');
    await gate.handOversDone();
  });
});
