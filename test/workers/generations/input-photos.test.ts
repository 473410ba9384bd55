import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import sharp from 'sharp';
import type { GenerationInput } from '../../../db/generations/model';
import type { Storage } from '../../../media/storage';
import { readInputPhotos, unusableInputPhoto } from '../../../workers/generations/input-photos';
import { PHOTO_HEADER_BYTES } from '../../../media/photo-header';
import { services } from '../../harness';
import { hugePngHeader } from '../../images';

describe('the photo check before submission reads each photo\'s header from its first bytes', function () {
  this.timeout(30_000);
  let reads: { ranged: number; whole: number; bytes: number };
  let storage: Storage;
  beforeEach(() => {
    const real = services().storage;
    reads = { ranged: 0, whole: 0, bytes: 0 };
    storage = Object.assign(Object.create(real) as Storage, {
      getHead: async (key: string, length: number) => {
        const head = await real.getHead(key, length);
        reads.ranged += 1;
        reads.bytes += head.length;
        return head;
      },
      get: async (key: string) => {
        const body = await real.get(key);
        reads.whole += 1;
        reads.bytes += body.length;
        return body;
      },
    });
  });

  async function stored(body: Buffer): Promise<GenerationInput> {
    const key = `uploads/input-photos-test/${randomUUID()}`;
    await services().storage.put(key, body, 'image/jpeg');
    return { upload_id: randomUUID(), object_key: key, person: 0 };
  }

  /** A photo of noise: megabytes that do not compress, as a real 12 MP photo does not. */
  async function largePhoto(side: number): Promise<Buffer> {
    return sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } }).jpeg({ quality: 95 }).toBuffer();
  }

  it('a photo of megabytes: only its first PHOTO_HEADER_BYTES are read, and it is usable', async () => {
    const photo = await largePhoto(1600);
    expect(photo.length).to.be.above(4 * PHOTO_HEADER_BYTES);
    expect(await unusableInputPhoto(storage, [await stored(photo)])).to.equal(null);
    expect(reads).to.deep.equal({ ranged: 1, whole: 0, bytes: PHOTO_HEADER_BYTES });
  });

  it('a photo whose header lies past the first bytes (a long EXIF ahead of it) is read whole, and is usable', async () => {
    const photo = await sharp(await largePhoto(64)).withExif({ IFD0: { ImageDescription: 'x'.repeat(8000) } }).jpeg().toBuffer();
    expect(await unusableInputPhoto(storage, [await stored(photo)], 1024)).to.equal(null);
    expect(reads).to.deep.equal({ ranged: 1, whole: 1, bytes: 1024 + photo.length });
  });

  it('above 100 megapixels from the header alone; a broken file after reading it whole; a vanished object: bad_input_image reasons', async () => {
    const huge = await stored(hugePngHeader(12_000));
    expect(await unusableInputPhoto(storage, [huge])).to.equal(`photo ${huge.upload_id} has 144 megapixels`);
    expect(reads).to.include({ ranged: 1, whole: 0 });

    const broken = await stored(randomBytes(4096));
    expect(await unusableInputPhoto(storage, [broken], 1024)).to.equal(`photo ${broken.upload_id} is not a readable image`);
    expect(reads).to.include({ ranged: 2, whole: 1 });

    const gone = { upload_id: randomUUID(), object_key: `uploads/input-photos-test/${randomUUID()}`, person: 0 };
    expect(await unusableInputPhoto(storage, [gone])).to.equal(`photo ${gone.upload_id} is gone from storage`);
  });

  it('checks every photo of a generation in turn and names the first unusable one', async () => {
    const good = await stored(await largePhoto(64));
    const broken = await stored(Buffer.from('not an image at all'));
    expect(await unusableInputPhoto(storage, [good, broken, good])).to.equal(`photo ${broken.upload_id} is not a readable image`);
  });

  it('reads the photos whole for the provider\'s file store, with their media type, or names the first unusable one as the check does', async () => {
    const jpeg = await largePhoto(64);
    const png = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#406080' } }).png().toBuffer();
    const [first, second] = [await stored(jpeg), await stored(png)];
    const files = await readInputPhotos(storage, [first, second]);
    expect(files).to.be.an('array');
    expect((files as { body: Buffer; contentType: string }[]).map(({ body, contentType }) => ({ body, contentType }))).to.deep.equal([
      { body: jpeg, contentType: 'image/jpeg' },
      { body: png, contentType: 'image/png' },
    ]);
    expect(reads).to.include({ ranged: 0, whole: 2 });

    const huge = await stored(hugePngHeader(12_000));
    const broken = await stored(Buffer.from('not an image at all'));
    const gone = { upload_id: randomUUID(), object_key: `uploads/input-photos-test/${randomUUID()}`, person: 0 };
    expect(await readInputPhotos(storage, [first, huge])).to.equal(`photo ${huge.upload_id} has 144 megapixels`);
    expect(await readInputPhotos(storage, [broken, first])).to.equal(`photo ${broken.upload_id} is not a readable image`);
    expect(await readInputPhotos(storage, [first, gone])).to.equal(`photo ${gone.upload_id} is gone from storage`);
  });
});
