import { expect } from 'chai';
import { Wakeup } from '../../../workers/runtime/wakeup';

describe('the loops\' Wakeup', () => {
  it('waits the given time when nobody wakes it', async () => {
    const started = Date.now();
    await new Wakeup().wait(60);
    expect(Date.now() - started).to.be.at.least(55);
  });

  it('returns at once when woken during the wait', async () => {
    const wakeup = new Wakeup();
    setTimeout(() => wakeup.wake(), 10);
    const started = Date.now();
    await wakeup.wait(5000);
    expect(Date.now() - started).to.be.below(1000);
  });

  it('keeps a wake that came between two waits, and only one', async () => {
    const wakeup = new Wakeup();
    wakeup.wake();
    wakeup.wake();
    let started = Date.now();
    await wakeup.wait(5000);
    expect(Date.now() - started).to.be.below(100);
    started = Date.now();
    await wakeup.wait(50);
    expect(Date.now() - started).to.be.at.least(45);
  });

  it('ends a longer wait by the moment a wakeWithin names, and never a shorter one later', async () => {
    const wakeup = new Wakeup();
    setTimeout(() => wakeup.wakeWithin(40), 10);
    let started = Date.now();
    await wakeup.wait(5000);
    expect(Date.now() - started).to.be.within(40, 1000);
    setTimeout(() => wakeup.wakeWithin(5000), 10);
    started = Date.now();
    await wakeup.wait(60);
    expect(Date.now() - started).to.be.within(55, 1000);
  });

  it('keeps a wakeWithin that came between two waits for the next wait only', async () => {
    const wakeup = new Wakeup();
    wakeup.wakeWithin(30);
    let started = Date.now();
    await wakeup.wait(5000);
    expect(Date.now() - started).to.be.below(1000);
    started = Date.now();
    await wakeup.wait(80);
    expect(Date.now() - started).to.be.at.least(75);
  });

  it('takes a wakeWithin of 0 as a wake', async () => {
    const wakeup = new Wakeup();
    wakeup.wakeWithin(0);
    const started = Date.now();
    await wakeup.wait(5000);
    expect(Date.now() - started).to.be.below(100);
  });
});
