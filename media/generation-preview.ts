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

/** The preview of a result file; its size is read from the file while the images are made. */
export async function buildGenerationPreview(result: Buffer, outputType: 'image' | 'video'): Promise<GenerationPreview> {
  if (outputType === 'video') {
    const { width, height } = await probeVideo(result);
    return { ...await previewImages(await extractFrame(result, VIDEO_POSTER_AT_S)), posterIsThumb: true, width, height };
  }
  const [size, images] = await Promise.all([probeImage(result), previewImages(result)]);
  return imagePreview(images, size);
}

/** What a preview draws from its image: the thumb and the blurhash. */
export interface PreviewImages {
  thumb: Buffer;
  blurhash: string;
}

/**
 * The thumb and the blurhash of an image. A JPEG is sampled for its blurhash at once, beside its
 * thumb, on another of libuv's threads (sharp runs each on one), so a user waits for the longer of
 * the two: its decoder shrinks on load, so the 32-pixel sample costs little more than the thumb's.
 * Any other format is sampled from the thumb once it is made, which costs less CPU than decoding a
 * PNG or WebP result whole a second time. Both samples look the same at 32 pixels.
 */
export async function previewImages(image: Buffer): Promise<PreviewImages> {
  if (isJpeg(image)) {
    const [thumb, blurhash] = await Promise.all([webpCopy(image, THUMB_SHORT_SIDE), blurhashOf(image)]);
    return { thumb, blurhash };
  }
  const thumb = await webpCopy(image, THUMB_SHORT_SIDE);
  return { thumb, blurhash: await blurhashOf(thumb) };
}

/** A JPEG file starts with its SOI marker and the next marker's first byte. */
function isJpeg(bytes: Buffer): boolean {
  return bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
}

/** The preview of an image result of `originalSize`, from its images. */
export function imagePreview(images: PreviewImages, originalSize: Size): GenerationPreview {
  return { ...images, posterIsThumb: false, ...originalSize };
}
