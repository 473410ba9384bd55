import sharp from 'sharp';
import { download, isSuccess } from '../../clients/outbound-http';
import { evenSizeForShortSide } from '../../media/dimensions';
import { probeImage } from '../../media/images';

/**
 * The provider could not use the photos it was given: answered as 400 `bad_input_image` when it
 * sees it at the submission (unreadable, not an image by its header, too large), or the task fails
 * with that type when the pixels turn out broken as the model reads them.
 */
export class BadInputImageError extends Error {
  override readonly name = 'BadInputImageError';
}

/** The first photo, oriented and downscaled once as the model starts, as raw RGB; every model renders from it. */
export interface Still {
  data: Buffer;
  width: number;
  height: number;
}

/** Contract B: a photo above about 100 megapixels fails as `bad_input_image`. */
const MAX_MEGAPIXELS = 100;
export const MAX_PHOTO_BYTES = 50 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 15_000;
/** Small stills keep per-task work low under load; even sides suit H.264 in yuv420p. */
const STILL_SHORT_SIDE = 480;

/**
 * Reads every input the way a provider does: a file staged with it (`staged` answers its bytes, or
 * null for a link that is not one) from its own store, any other link over HTTP.
 */
export function readPhotos(urls: string[], signal: AbortSignal, staged: (url: string) => Promise<Buffer> | null): Promise<Buffer[]> {
  return Promise.all(urls.map((url, index) => (staged(url) ?? downloadPhoto(url, signal)).catch((error: unknown) => {
    throw new BadInputImageError(`input ${index} could not be read: ${(error as Error).message}`);
  })));
}

async function downloadPhoto(url: string, signal: AbortSignal): Promise<Buffer> {
  const response = await download(url, { timeoutMs: DOWNLOAD_TIMEOUT_MS, signal, maxBytes: MAX_PHOTO_BYTES });
  if (!isSuccess(response.status)) throw new Error(`HTTP ${response.status}`);
  return response.body;
}

/** The first photo of a task as it was taken: its bytes, and the size its still will have. */
export interface TakenPhoto {
  bytes: Buffer;
  stillSize: { width: number; height: number };
}

/**
 * What a provider checks as it takes a task: the photo's header names an image of at most 100
 * megapixels. Its pixels are not decoded here: that is the model's work, when it runs.
 */
export async function takePhoto(bytes: Buffer): Promise<TakenPhoto> {
  const { width, height, megapixels } = await probeImage(bytes).catch(() => {
    throw new BadInputImageError('the photo is not a readable image');
  });
  if (megapixels > MAX_MEGAPIXELS) throw new BadInputImageError(`the photo has ${width}x${height} pixels, above 100 megapixels`);
  return { bytes, stillSize: evenSizeForShortSide({ width, height }, STILL_SHORT_SIDE) };
}

/** The still a model renders from: the taken photo oriented, downscaled and flattened to raw RGB. */
export async function decodeStill({ bytes, stillSize }: TakenPhoto): Promise<Still> {
  try {
    const data = await sharp(bytes)
      .autoOrient()
      .resize(stillSize.width, stillSize.height, { fit: 'fill' })
      .flatten({ background: '#ffffff' })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer();
    return { data, ...stillSize };
  } catch {
    throw new BadInputImageError('the photo data is broken');
  }
}

/** A sharp pipeline over the still's pixels. */
export function stillImage(still: Still): sharp.Sharp {
  return sharp(still.data, { raw: { width: still.width, height: still.height, channels: 3 } });
}

/**
 * What a task gives its model: the first photo (when it was sent and could be decoded) and the
 * prompt ('' for an effect).
 */
export interface ModelInput {
  still: Still | null;
  prompt: string;
}
