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

describe('hand-overs before result copies (workers/generations/hand-over-first.ts)', () => {
  it('lets a claim go at once when no hand-over is under way', async () => {
    const gate = new HandOverFirst(10_000);
    const started = Date.now();
    await gate.handOversDone();
    expect(Date.now() - started).to.be.below(1000);
  });

  it('holds a claim until the rounds and submissions under way have ended, failed ones included', async () => {
    const gate = new HandOverFirst(10_000);
    const round = deferred();
    const submission = deferred();
    void gate.track(round.promise);
    gate.track(submission.promise).catch(() => undefined);
    let released = false;
    const claim = gate.handOversDone().then(() => {
      released = true;
    });
    round.resolve();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(released, 'one submission still runs').to.equal(false);
    submission.reject(new Error('provider unreachable'));
    await claim;
    expect(released).to.equal(true);
  });

  it('waits for a round that starts in the same turn as the claim (both woken by one NOTIFY)', async () => {
    const gate = new HandOverFirst(10_000);
    const round = deferred();
    let released = false;
    const claim = gate.handOversDone().then(() => {
      released = true;
    });
    void gate.track(round.promise);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(released).to.equal(false);
    round.resolve();
    await claim;
  });

  it('never waits longer than its limit, nor for what started after it began waiting', async () => {
    const gate = new HandOverFirst(50);
    void gate.track(new Promise(() => undefined));
    const started = Date.now();
    await gate.handOversDone();
    const waited = Date.now() - started;
    expect(waited).to.be.at.least(45).and.below(1000);

    const slow = new HandOverFirst(10_000);
    const first = deferred();
    void slow.track(first.promise);
    const claim = slow.handOversDone();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 5));
    void slow.track(new Promise(() => undefined));
    first.resolve();
    await claim;
  });

  it('hands back what it tracks, result or error', async () => {
    const gate = new HandOverFirst(10);
    expect(await gate.track(Promise.resolve(7))).to.equal(7);
    const error = await gate.track(Promise.reject(new Error('refused'))).then(() => null, (thrown: Error) => thrown);
    expect(error?.message).to.equal('refused');
    await gate.handOversDone();
  });
});
