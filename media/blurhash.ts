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
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true }),
  );
  return encodeBlurhash(data, info.width, info.height, info.channels, COMPONENTS_X, COMPONENTS_Y);
}

/**
 * The blurhash of `pixels` (rows of `channels` bytes a pixel, RGB first; alpha is ignored), the
 * same string as the `blurhash` package's `encode`, with its arithmetic done in the same order:
 * that encoder recomputes both cosines and the sRGB curve of every channel for every pixel and
 * component (about 4 ms of a worker's event loop a preview), where these come from tables (0.1 ms).
 */
export function encodeBlurhash(pixels: Uint8Array, width: number, height: number, channels: number, componentsX: number, componentsY: number): string {
  const sums = componentSums(pixels, width, height, channels, cosineTable(componentsX, width), cosineTable(componentsY, height), componentsX, componentsY);
  const scale = 1 / (width * height);
  const factors: [number, number, number][] = [];
  for (let component = 0; component < componentsX * componentsY; component += 1) {
    factors.push([sums[component * 3] * scale, sums[component * 3 + 1] * scale, sums[component * 3 + 2] * scale]);
  }

  const [dc, ...ac] = factors;
  let hash = base83((componentsX - 1) + (componentsY - 1) * 9, 1);
  let maximum = 1;
  if (ac.length > 0) {
    const actualMaximum = Math.max(...ac.map((factor) => Math.max(...factor)));
    const quantisedMaximum = Math.floor(Math.max(0, Math.min(82, Math.floor(actualMaximum * 166 - 0.5))));
    maximum = (quantisedMaximum + 1) / 166;
    hash += base83(quantisedMaximum, 1);
  } else {
    hash += base83(0, 1);
  }
  hash += base83((linearToSrgb(dc[0]) << 16) + (linearToSrgb(dc[1]) << 8) + linearToSrgb(dc[2]), 4);
  for (const factor of ac) {
    const [r, g, b] = factor.map((value) => Math.floor(Math.max(0, Math.min(18, Math.floor(signPow(value / maximum, 0.5) * 9 + 9.5)))));
    hash += base83(r * 19 * 19 + g * 19 + b, 2);
  }
  return hash;
}

/**
 * `sums[3 * (j * componentsX + i) + channel]`: the sum over every pixel of its linear value times
 * the normalised basis of component (i, j). Its own function with typed arrays only, so that V8
 * optimises it as a whole: in `encodeBlurhash`'s body the loop ran mostly unoptimised (its OSR code
 * deoptimised on each call), and every addition boxed a double, about 0.7 MB of the worker's heap a
 * preview.
 */
function componentSums(
  pixels: Uint8Array, width: number, height: number, channels: number,
  cosX: Float64Array, cosY: Float64Array, componentsX: number, componentsY: number,
): Float64Array {
  const sums = new Float64Array(componentsX * componentsY * 3);
  for (let j = 0; j < componentsY; j += 1) {
    for (let i = 0; i < componentsX; i += 1) {
      const normalisation = i === 0 && j === 0 ? 1 : 2;
      let r = 0;
      let g = 0;
      let b = 0;
      for (let x = 0; x < width; x += 1) {
        const normalisedCosX = normalisation * cosX[i * width + x];
        for (let y = 0; y < height; y += 1) {
          const basis = normalisedCosX * cosY[j * height + y];
          const at = (y * width + x) * channels;
          r += basis * SRGB_TO_LINEAR[pixels[at]];
          g += basis * SRGB_TO_LINEAR[pixels[at + 1]];
          b += basis * SRGB_TO_LINEAR[pixels[at + 2]];
        }
      }
      const component = (j * componentsX + i) * 3;
      sums[component] = r;
      sums[component + 1] = g;
      sums[component + 2] = b;
    }
  }
  return sums;
}

const SRGB_TO_LINEAR = Float64Array.from({ length: 256 }, (_, byte) => {
  const value = byte / 255;
  return value <= 0.04045 ? value / 12.92 : Math.pow((value + 0.055) / 1.055, 2.4);
});

/** `table[component * size + position]` = cos(π · component · position / size), evaluated as the package does. */
function cosineTable(components: number, size: number): Float64Array {
  const table = new Float64Array(components * size);
  for (let component = 0; component < components; component += 1) {
    for (let position = 0; position < size; position += 1) table[component * size + position] = Math.cos((Math.PI * component * position) / size);
  }
  return table;
}

function linearToSrgb(linear: number): number {
  const value = Math.max(0, Math.min(1, linear));
  return value <= 0.0031308 ? Math.trunc(value * 12.92 * 255 + 0.5) : Math.trunc((1.055 * Math.pow(value, 1 / 2.4) - 0.055) * 255 + 0.5);
}

function signPow(value: number, exponent: number): number {
  return (value < 0 ? -1 : 1) * Math.pow(Math.abs(value), exponent);
}

const BASE83 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~';

function base83(value: number, length: number): string {
  let text = '';
  for (let place = 1; place <= length; place += 1) text += BASE83[Math.floor((Math.floor(value) / Math.pow(83, length - place)) % 83)];
  return text;
}
