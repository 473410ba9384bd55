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
    return { ...await previewImages(await extractFrame(result, VIDEO_POSTER_AT_S)), posterIsThumb: true, width, height };
  }
  const [size, images] = await Promise.all([imageSize ?? probeImage(result), previewImages(result)]);
  return imagePreview(images, size);
}

/** What a preview draws from its image: the thumb and the blurhash. */
export interface PreviewImages {
  thumb: Buffer;
  blurhash: string;
}

/**
 * The thumb and the blurhash of an image, made at once on two of libuv's threads (sharp runs each
 * on one), so a user waits for the longer of the two, not both. The blurhash samples the image
 * itself at 32 pixels, which looks the same as the thumb at that size.
 */
export async function previewImages(image: Buffer): Promise<PreviewImages> {
  const [thumb, blurhash] = await Promise.all([webpCopy(image, THUMB_SHORT_SIDE), blurhashOf(image)]);
  return { thumb, blurhash };
}

/** The preview of an image result of `originalSize`, from its images. */
export function imagePreview(images: PreviewImages, originalSize: Size): GenerationPreview {
  return { ...images, posterIsThumb: false, ...originalSize };
}
