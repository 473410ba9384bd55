import { probeImage } from './images';

/** Contract B: a photo above about 100 megapixels fails as `bad_input_image`. */
export const MAX_PHOTO_MEGAPIXELS = 100;

/**
 * What is read of a photo first: its header is at the start (a JPEG's frame header comes after its
 * EXIF, at most 64 KB, and an ICC profile of a few KB; PNG's and WebP's sizes are in their first
 * bytes), so a 10 MB upload is not read whole to learn its size. A photo whose header lies further
 * (a very large embedded profile, a HEIF with its metadata at the end) is read whole.
 */
export const PHOTO_HEADER_BYTES = 256 * 1024;

/**
 * Whether a photo's first bytes show a readable image of at most `MAX_PHOTO_MEGAPIXELS`: false when
 * they show a larger one, no image, or do not hold its header (the whole file tells then).
 */
export async function headerShowsUsablePhoto(head: Buffer): Promise<boolean> {
  try {
    return (await probeImage(head)).megapixels <= MAX_PHOTO_MEGAPIXELS;
  } catch {
    return false;
  }
}
