import { decode, encode, isBlurhashValid } from 'blurhash';
import { expect } from 'chai';
import sharp from 'sharp';
import { blurhashOf, encodeBlurhash } from '../../media/blurhash';
import { demoPhoto } from '../../media/demo-assets';
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

  it('encodes exactly as the blurhash package, for every size, component count and pixel value', () => {
    let seed = 42;
    // A small linear congruential generator: the same pixels on every run.
    const nextByte = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed >> 23;
    };
    const pictures: { width: number; height: number; fill: (index: number) => number }[] = [
      { width: 1, height: 1, fill: nextByte },
      { width: 7, height: 3, fill: nextByte },
      { width: 32, height: 24, fill: nextByte },
      { width: 32, height: 32, fill: nextByte },
      { width: 32, height: 32, fill: () => 0 },
      { width: 32, height: 32, fill: () => 255 },
      // Stripes: the largest AC components, at the edges of the quantisation.
      { width: 31, height: 17, fill: (index) => (Math.floor(index / 4) % 2 ? 255 : 0) },
    ];
    const components = [[1, 1], [4, 3], [9, 9], [1, 5], [6, 1]];
    let compared = 0;
    for (const { width, height, fill } of pictures) {
      const rgba = Uint8ClampedArray.from({ length: width * height * 4 }, (_, index) => fill(index));
      for (const [x, y] of components) {
        expect(encodeBlurhash(rgba as unknown as Uint8Array, width, height, 4, x, y), `${width}x${height}, ${x}x${y}`).to.equal(encode(rgba, width, height, x, y));
        compared += 1;
      }
    }
    expect(compared).to.equal(pictures.length * components.length);
  });

  it('reads RGB without alpha as the package reads RGBA', () => {
    const rgba = Uint8ClampedArray.from({ length: 5 * 4 * 4 }, (_, index) => (index * 37) % 256);
    const rgb = Uint8Array.from({ length: 5 * 4 * 3 }, (_, index) => rgba[Math.floor(index / 3) * 4 + (index % 3)]);
    expect(encodeBlurhash(rgb, 5, 4, 3, 4, 3)).to.equal(encode(rgba, 5, 4, 4, 3));
  });

  it('gives a photo the hash the package gives its 32-pixel sample', async () => {
    const photo = await demoPhoto();
    const { data, info } = await sharp(photo).autoOrient().resize({ width: 32, height: 32, fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const expected = encode(new Uint8ClampedArray(data), info.width, info.height, 4, 3);
    expect(await blurhashOf(photo)).to.equal(expected);
  });

  it('throws UnreadableImageError for bytes that are not an image', async () => {
    expect(await rejectionOf(blurhashOf(Buffer.from('nope')))).to.be.instanceOf(UnreadableImageError);
  });
});
