import { blurhashOf } from './blurhash';
import type { Size } from './dimensions';
import { probeImage, webpCopy } from './images';
import { extractFrame } from './video';
import { probeVideo } from './video-probe';

/** The contract's poster of a video result: the frame half a second from the start. */
const VIDEO_POSTER_AT_S = 0.5;
const THUMB_SHORT_SIDE = 480;

export interface GenerationPreview {
  /** WebP, 480 on the short side, never upscaled. */
  thumb: Buffer;
  /** True for video: the thumb is also the poster. */
  posterIsThumb: boolean;
  /** Size of the original image or video. */
  width: number;
  height: number;
  blurhash: string;
}

/** `imageSize`: an image's displayed size when the caller read its header already (it is not read again). */
export async function buildGenerationPreview(result: Buffer, outputType: 'image' | 'video', imageSize?: Size): Promise<GenerationPreview> {
  if (outputType === 'video') {
    const { width, height } = await probeVideo(result);
    return previewOf(await extractFrame(result, VIDEO_POSTER_AT_S), { width, height }, true);
  }
  const { width, height } = imageSize ?? await probeImage(result);
  return previewOf(result, { width, height }, false);
}

async function previewOf(image: Buffer, originalSize: Size, posterIsThumb: boolean): Promise<GenerationPreview> {
  const thumb = await webpCopy(image, THUMB_SHORT_SIDE);
  // The thumb is far smaller than the original and looks the same at blurhash's resolution.
  return { thumb, posterIsThumb, ...originalSize, blurhash: await blurhashOf(thumb) };
}
