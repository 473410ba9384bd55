import { expect } from 'chai';
import { evenSizeForShortSide } from '../../media/dimensions';

describe('media/dimensions evenSizeForShortSide', () => {
  it('brings the short side of a 1920x1080 clip to 720', () => {
    expect(evenSizeForShortSide({ width: 1920, height: 1080 }, 720)).to.deep.equal({ width: 1280, height: 720 });
  });

  it('brings the short side of a portrait 1080x1920 clip to 480', () => {
    expect(evenSizeForShortSide({ width: 1080, height: 1920 }, 480)).to.deep.equal({ width: 480, height: 852 });
  });

  it('keeps a 320x240 clip at 320x240: never upscales', () => {
    expect(evenSizeForShortSide({ width: 320, height: 240 }, 720)).to.deep.equal({ width: 320, height: 240 });
  });

  it('rounds odd sides down to even ones, never above the original', () => {
    expect(evenSizeForShortSide({ width: 301, height: 457 }, 720)).to.deep.equal({ width: 300, height: 456 });
  });
});
