import sharp from 'sharp';
import { download, isSuccess } from '../../pool/provider/exchange';
import { evenSizeForShortSide } from '../../media/dimensions';

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
const MAX_PIXELS = 100_000_000;
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

/**
 * What a provider checks as it takes a task: the photo's header names an image of at most 100
 * megapixels. Its pixels are not decoded here: that is the model's work, when it runs.
 */
export async function probeStill(photo: Buffer): Promise<{ width: number; height: number }> {
  const metadata = await sharp(photo, { limitInputPixels: false }).metadata().catch(() => {
    throw new BadInputImageError('the photo is not a readable image');
  });
  const { width, height } = metadata.autoOrient;
  if (width * height > MAX_PIXELS) throw new BadInputImageError(`the photo has ${width}x${height} pixels, above 100 megapixels`);
  return { width, height };
}

/** The still a model renders from; checks the header first, so a huge photo is refused without being decoded. */
export async function decodeStill(photo: Buffer): Promise<Still> {
  const size = evenSizeForShortSide(await probeStill(photo), STILL_SHORT_SIDE);
  try {
    const data = await sharp(photo)
      .autoOrient()
      .resize(size.width, size.height, { fit: 'fill' })
      .flatten({ background: '#ffffff' })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer();
    return { data, ...size };
  } catch {
    throw new BadInputImageError('the photo data is broken');
  }
}

/** A sharp pipeline over the still's pixels. */
export function stillImage(still: Still): sharp.Sharp {
  return sharp(still.data, { raw: { width: still.width, height: still.height, channels: 3 } });
}
