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

/**
 * Stores a preview's thumb once it is made (the thumb's key is the caller's): it runs while the
 * blurhash is sampled.
 */
export type StoreThumb = (thumb: Buffer) => Promise<void>;

/** The preview of a result file; its size is read from the file while the images are made. */
export async function buildGenerationPreview(result: Buffer, outputType: 'image' | 'video', storeThumb: StoreThumb): Promise<GenerationPreview> {
  if (outputType === 'video') {
    const { width, height } = await probeVideo(result);
    return { ...await previewImages(await extractFrame(result, VIDEO_POSTER_AT_S), storeThumb), posterIsThumb: true, width, height };
  }
  const [size, images] = await Promise.all([probeImage(result), previewImages(result, storeThumb)]);
  return imagePreview(images, size);
}

/** What a preview draws from its image: the thumb and the blurhash. */
export interface PreviewImages {
  thumb: Buffer;
  blurhash: string;
}

/**
 * The thumb and the blurhash of an image. The thumb comes first, alone: a user waits for it and
 * then for its upload, and a sample decoded beside it on the other core slowed it by a tenth to a
 * third (two cores). The blurhash is then sampled while `storeThumb` uploads the thumb, which takes
 * longer: a JPEG from itself (its decoder shrinks on load, so the 32-pixel sample costs little),
 * any other format from the thumb, which costs less CPU than decoding a PNG or WebP result whole a
 * second time. Both samples look the same at 32 pixels.
 */
export async function previewImages(image: Buffer, storeThumb: StoreThumb): Promise<PreviewImages> {
  const thumb = await webpCopy(image, THUMB_SHORT_SIDE);
  const [blurhash] = await Promise.all([blurhashOf(isJpeg(image) ? image : thumb), storeThumb(thumb)]);
  return { thumb, blurhash };
}

/** A JPEG file starts with its SOI marker and the next marker's first byte. */
function isJpeg(bytes: Buffer): boolean {
  return bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
}

/** The preview of an image result of `originalSize`, from its images. */
export function imagePreview(images: PreviewImages, originalSize: Size): GenerationPreview {
  return { ...images, posterIsThumb: false, ...originalSize };
}
