import sharp from 'sharp';
import { UnreadableImageError } from './errors';

export type ImageFormat = sharp.Metadata['format'];

export interface ImageInfo {
  format: ImageFormat;
  /** Displayed size: EXIF orientation already applied, so a portrait phone photo is taller than wide. */
  width: number;
  height: number;
  hasAlpha: boolean;
  megapixels: number;
}

/** Runs a sharp operation and reports any decoding failure as an UnreadableImageError. */
export async function readingImage<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw new UnreadableImageError(`the file is not a readable image: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Reads the header only; a file whose pixel data is damaged is caught later, when it is decoded.
 * Any size is read (sharp's pixel limit is off): the limit guards a decode, which this is not, and
 * callers judge the size themselves (a photo above 100 megapixels is `bad_input_image`).
 */
export async function probeImage(buffer: Buffer): Promise<ImageInfo> {
  const metadata = await readingImage(() => sharp(buffer, { limitInputPixels: false }).metadata());
  const { width, height } = metadata.autoOrient;
  return {
    format: metadata.format,
    width,
    height,
    hasAlpha: metadata.hasAlpha,
    megapixels: (width * height) / 1_000_000,
  };
}

/**
 * libwebp's compression effort (0 to 6; sharp's default is 4). At 2 a 480-pixel thumb costs half the
 * CPU of the default for 4 to 7% more bytes at the same quality: the thumb of every generation is
 * made on the worker that hands slots over, and a phone barely notices 300 bytes.
 */
const WEBP_EFFORT = 2;

/** WebP whose short side is `shortSide`, or the original size when that is smaller; transparency is kept. */
export async function webpCopy(buffer: Buffer, shortSide: number): Promise<Buffer> {
  return readingImage(() =>
    sharp(buffer)
      .autoOrient()
      .resize({ width: shortSide, height: shortSide, fit: 'outside', withoutEnlargement: true })
      .webp({ quality: 80, effort: WEBP_EFFORT })
      .toBuffer(),
  );
}

/**
 * JPEG without any metadata (EXIF, GPS, XMP, ICC), for avatars in a public bucket.
 * The pixels are turned upright first because the orientation tag that said how goes away with the EXIF.
 */
export async function reencodeJpegWithoutMetadata(buffer: Buffer): Promise<Buffer> {
  return readingImage(() =>
    sharp(buffer).autoOrient().flatten({ background: '#ffffff' }).jpeg({ quality: 88, mozjpeg: true }).toBuffer(),
  );
}
