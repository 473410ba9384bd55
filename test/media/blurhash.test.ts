import { decode, isBlurhashValid } from 'blurhash';
import { expect } from 'chai';
import { blurhashOf } from '../../media/blurhash';
import { UnreadableImageError } from '../../media/errors';
import { rejectionOf, solidJpeg } from './fixtures';

describe('media/blurhash', () => {
  it('encodes 4x3 components: size flag "L" and 28 characters', async () => {
    const hash = await blurhashOf(await solidJpeg(1200, 900));
    expect(isBlurhashValid(hash).result).to.equal(true);
    // The first character is (componentsY - 1) * 9 + (componentsX - 1) = 21 in base 83, which is "L".
    expect(hash[0]).to.equal('L');
    // 1 size flag + 1 maximum + 4 DC + 2 per AC component (11).
    expect(hash).to.have.length(28);
  });

  it('decodes to the colour of the image', async () => {
    const pixels = decode(await blurhashOf(await solidJpeg(400, 300, '#ff0000')), 4, 4);
    const [r, g, b] = pixels.slice(0, 3);
    expect(r).to.be.above(230);
    expect(g).to.be.below(30);
    expect(b).to.be.below(30);
  });

  it('throws UnreadableImageError for bytes that are not an image', async () => {
    expect(await rejectionOf(blurhashOf(Buffer.from('nope')))).to.be.instanceOf(UnreadableImageError);
  });
});
