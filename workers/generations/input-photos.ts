import type { GenerationInput } from '../../db/generations/model';
import { UnreadableImageError } from '../../media/errors';
import { probeImage } from '../../media/images';
import type { Storage } from '../../media/storage';

/** Contract B: a photo above about 100 megapixels fails as `bad_input_image`. */
const maxMegapixels = 100;

/**
 * Reads the header of every input photo before anything is sent to the provider: a broken file or
 * one above ~100 MP is `bad_input_image` (null when all are usable). A photo whose object vanished
 * from storage is unusable too; any other storage error is thrown (transient: try again later).
 */
export async function unusableInputPhoto(storage: Storage, inputs: GenerationInput[]): Promise<string | null> {
  for (const input of inputs) {
    let body: Buffer;
    try {
      body = await storage.get(input.object_key);
    } catch (error) {
      if (['NoSuchKey', 'NotFound'].includes((error as { code?: string }).code ?? '')) return `photo ${input.upload_id} is gone from storage`;
      throw error;
    }
    try {
      const { megapixels } = await probeImage(body);
      if (megapixels > maxMegapixels) return `photo ${input.upload_id} has ${megapixels.toFixed(0)} megapixels`;
    } catch (error) {
      if (error instanceof UnreadableImageError) return `photo ${input.upload_id} is not a readable image`;
      throw error;
    }
  }
  return null;
}
