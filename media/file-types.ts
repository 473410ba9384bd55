import { UnreadableVideoError, UnsupportedImageFormatError } from './errors';
import { probeImage, type ImageFormat } from './images';

export interface FileType {
  extension: string;
  contentType: string;
}

export const FILE_TYPES = {
  jpeg: { extension: 'jpg', contentType: 'image/jpeg' },
  png: { extension: 'png', contentType: 'image/png' },
  webp: { extension: 'webp', contentType: 'image/webp' },
  gif: { extension: 'gif', contentType: 'image/gif' },
  mp4: { extension: 'mp4', contentType: 'video/mp4' },
} as const satisfies Record<string, FileType>;

/** Only formats every client can show; SVG in particular would be a script-capable file in a public bucket. */
const SERVED_IMAGE_FORMATS: Partial<Record<ImageFormat, FileType>> = {
  jpeg: FILE_TYPES.jpeg,
  png: FILE_TYPES.png,
  webp: FILE_TYPES.webp,
  gif: FILE_TYPES.gif,
};

/** Extension and content type of the image as it is, so a transparent PNG is stored and served as PNG. */
export async function imageFileType(buffer: Buffer): Promise<FileType> {
  return servedImageType((await probeImage(buffer)).format);
}

/** `imageFileType` of an image whose header was read already. */
export function servedImageType(format: ImageFormat): FileType {
  const fileType = SERVED_IMAGE_FORMATS[format];
  if (!fileType) throw new UnsupportedImageFormatError(format);
  return fileType;
}

/** HEIC and AVIF share the ISO media container with MP4 but carry their own brands, so brands decide. */
const MP4_BRANDS = new Set(['isom', 'iso2', 'iso3', 'iso4', 'iso5', 'iso6', 'mp41', 'mp42', 'avc1', 'dash', 'M4V ']);

/** The MP4 file type after checking the `ftyp` box: the major brand or a compatible one must be an MP4 brand. */
export function videoFileType(buffer: Buffer): FileType {
  if (buffer.length < 16 || buffer.toString('latin1', 4, 8) !== 'ftyp') {
    throw new UnreadableVideoError('the file is not an MP4 video: no ftyp box');
  }
  const boxEnd = Math.min(buffer.readUInt32BE(0), buffer.length);
  const brands = [buffer.toString('latin1', 8, 12)];
  for (let offset = 16; offset + 4 <= boxEnd; offset += 4) brands.push(buffer.toString('latin1', offset, offset + 4));
  if (!brands.some((brand) => MP4_BRANDS.has(brand))) {
    throw new UnreadableVideoError(`the file is not an MP4 video: brands ${brands.join(', ')}`);
  }
  return FILE_TYPES.mp4;
}
