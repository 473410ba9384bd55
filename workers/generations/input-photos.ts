import type { GenerationInput } from '../../db/generations/model';
import { UnreadableImageError } from '../../media/errors';
import { probeImage } from '../../media/images';
import { isMissingObject, type Storage } from '../../media/storage';
import type { FileToStage } from '../../clients/providers/adapter';
import { MAX_PHOTO_MEGAPIXELS, PHOTO_HEADER_BYTES } from '../../media/photo-header';

/**
 * Reads the header of every input photo before anything is sent to the provider: a broken file or
 * one above ~100 MP is `bad_input_image` (null when all are usable). A photo whose object vanished
 * from storage is unusable too; any other storage error is thrown (transient: try again later).
 */
export async function unusableInputPhoto(storage: Storage, inputs: GenerationInput[], headerBytes = PHOTO_HEADER_BYTES): Promise<string | null> {
  const read = await readEach(inputs, (key) => photoHeader(storage, key, headerBytes));
  return typeof read === 'string' ? read : null;
}

/** The photos read whole, checked as `unusableInputPhoto` checks them: the files, or what is wrong with one. */
export async function readInputPhotos(storage: Storage, inputs: GenerationInput[]): Promise<FileToStage[] | string> {
  return readEach(inputs, async (key) => {
    const body = await storage.get(key);
    const { format, megapixels } = await probeImage(body);
    return { body, contentType: `image/${format}`, megapixels };
  });
}

/** Each photo as `read` gives it, or the reason the first unusable one is `bad_input_image`. */
async function readEach<T extends { megapixels: number }>(inputs: GenerationInput[], read: (key: string) => Promise<T>): Promise<T[] | string> {
  const photos: T[] = [];
  for (const input of inputs) {
    let photo: T;
    try {
      photo = await read(input.object_key);
    } catch (error) {
      if (isMissingObject(error)) return `photo ${input.upload_id} is gone from storage`;
      if (error instanceof UnreadableImageError) return `photo ${input.upload_id} is not a readable image`;
      throw error;
    }
    if (photo.megapixels > MAX_PHOTO_MEGAPIXELS) return `photo ${input.upload_id} has ${photo.megapixels.toFixed(0)} megapixels`;
    photos.push(photo);
  }
  return photos;
}

/** The photo's header from its first `headerBytes`, or from the whole file when it is longer and they do not hold it. */
async function photoHeader(storage: Storage, key: string, headerBytes: number): ReturnType<typeof probeImage> {
  const head = await storage.getHead(key, headerBytes);
  try {
    return await probeImage(head);
  } catch (error) {
    if (!(error instanceof UnreadableImageError) || head.length < headerBytes) throw error;
    return probeImage(await storage.get(key));
  }
}
