import { expect } from 'chai';
import { backoffDelayMs } from '../../common/backoff';

describe('backoff with jitter', () => {
  const backoff = { baseMs: 100, capMs: 5000 };

  it('doubles from the base with each failure, up to the cap', () => {
    const highest = (failures: number) => backoffDelayMs(failures, backoff, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7, 100].map(highest)).to.deep.equal([100, 200, 400, 800, 1600, 3200, 5000, 5000]);
  });

  it('spreads each wait over the upper half of its step: never sooner than half of it', () => {
    expect(backoffDelayMs(3, backoff, () => 0)).to.equal(200);
    expect(backoffDelayMs(3, backoff, () => 0.5)).to.equal(300);
    const seen = new Set(Array.from({ length: 200 }, () => backoffDelayMs(5, backoff)));
    expect(seen.size).to.be.greaterThan(50);
    for (const wait of seen) expect(wait).to.be.within(800, 1600);
  });

  it('takes a first failure (or none) as one step of the base', () => {
    expect(backoffDelayMs(0, backoff, () => 1)).to.equal(100);
    expect(backoffDelayMs(1, backoff, () => 0)).to.equal(50);
  });
});
