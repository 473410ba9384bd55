import { encode } from 'blurhash';
import sharp from 'sharp';
import { readingImage } from './images';

/** A placeholder needs no detail, and encoding cost grows with pixel count. */
const SAMPLE_SIDE = 32;
const COMPONENTS_X = 4;
const COMPONENTS_Y = 3;

export async function blurhashOf(buffer: Buffer): Promise<string> {
  const { data, info } = await readingImage(() =>
    sharp(buffer)
      .autoOrient()
      .resize({ width: SAMPLE_SIDE, height: SAMPLE_SIDE, fit: 'inside' })
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true }),
  );
  return encode(new Uint8ClampedArray(data), info.width, info.height, COMPONENTS_X, COMPONENTS_Y);
}
