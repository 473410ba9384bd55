import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import Busboy from 'busboy';
import { BodyTooLarge } from './body-too-large';
import type { ApiContext } from './context';
import { invalidField, type ApiError } from './errors';

/**
 * A multipart/form-data upload read as it arrives (busboy): the one file of `fileField` is written to
 * `into` on disk and never past `maxFileBytes`: `413 payload_too_large` as soon as it goes beyond,
 * and the rest is thrown away as it arrives, within a bound (`body-too-large.ts`). Small text fields
 * are kept; other files are skipped. The JSON body parser leaves multipart bodies alone.
 */
export interface ReceivedUpload {
  /** Null when the request had no file in `fileField`. */
  file: { path: string; bytes: number } | null;
  fields: Record<string, string>;
}

/** Room for the multipart framing and the small fields around the file. */
const framingBytes = 64 * 1024;

export async function receiveUpload(
  ctx: ApiContext,
  options: { fileField: string; maxFileBytes: number; into: string; tooLarge: string },
): Promise<ReceivedUpload> {
  const missing = invalidField(['body', options.fileField], `send multipart/form-data with the file in \`${options.fileField}\``, 'missing');
  if (!ctx.is('multipart/form-data')) throw missing;
  const tooLarge = new BodyTooLarge(options.maxFileBytes, options.tooLarge);
  if (Number(ctx.get('content-length') || 0) > options.maxFileBytes + framingBytes) throw tooLarge;

  let parser: Busboy.Busboy;
  try {
    parser = Busboy({ headers: ctx.req.headers, limits: { fileSize: options.maxFileBytes, files: 1, fields: 8, fieldSize: 1024, parts: 16 } });
  } catch {
    throw missing;
  }
  return new Promise<ReceivedUpload>((resolve, reject) => {
    const fields: Record<string, string> = {};
    let written: Promise<{ path: string; bytes: number }> | null = null;
    let settled = false;
    const fail = (error: ApiError) => {
      if (settled) return;
      settled = true;
      ctx.req.unpipe(parser);
      parser.removeAllListeners();
      parser.on('error', () => undefined);
      reject(error);
    };
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (name, stream) => {
      if (name !== options.fileField || written) {
        stream.resume();
        return;
      }
      let bytes = 0;
      const out = createWriteStream(options.into);
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
      });
      stream.on('limit', () => {
        out.destroy();
        fail(tooLarge);
      });
      written = pipeline(stream, out).then(() => ({ path: options.into, bytes }));
      // Failures of the copy are reported at the end, or not at all once the request failed.
      written.catch(() => undefined);
    });
    parser.on('error', () => fail(invalidField(['body'], 'the multipart body is malformed', 'multipart_invalid')));
    parser.on('close', () => {
      if (settled) return;
      settled = true;
      (written ?? Promise.resolve(null)).then((file) => resolve({ file, fields }), reject);
    });
    ctx.req.on('aborted', () => fail(invalidField(['body'], 'the upload was cut off', 'multipart_invalid')));
    ctx.req.pipe(parser);
  });
}
