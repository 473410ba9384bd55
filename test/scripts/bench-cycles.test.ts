import { expect } from 'chai';
import { cycleShares } from '../../scripts/bench-generations';

describe('the pool bench\'s cycles', () => {
  it('takes each S tasks ended in order as a cycle, from the end of the one before (the first from the commit): L over its time', () => {
    // 2 slots, latency 1000 ms: the first cycle ends 1000 ms after the commit, the second 1250 ms after it, the third 1000 ms after that.
    const ends = [1000, 1000, 2100, 2250, 3000, 3250, 3900];
    expect(cycleShares(ends, 0, 2, 1000)).to.deep.equal([1, 0.8, 1]);
  });

  it('counts tasks in the order they ended, whatever order they were reported in, and no cycle of fewer than S', () => {
    expect(cycleShares([2000, 1000], 0, 2, 1000)).to.deep.equal([0.5]);
    expect(cycleShares([1000], 0, 2, 1000)).to.deep.equal([]);
  });
});
