/** The bytes are not an image sharp can read (broken, truncated or not an image at all). */
export class UnreadableImageError extends Error {
  override readonly name = 'UnreadableImageError';

  constructor(message = 'the file is not a readable image', options?: ErrorOptions) {
    super(message, options);
  }
}

/** A readable image in a format that is not served to clients (only JPEG, PNG, WebP and GIF are). */
export class UnsupportedImageFormatError extends Error {
  override readonly name = 'UnsupportedImageFormatError';

  constructor(readonly format: string) {
    super(`image format ${format} is not supported`);
  }
}

/** The bytes are not a video ffmpeg can read, or hold no video stream. */
export class UnreadableVideoError extends Error {
  override readonly name = 'UnreadableVideoError';

  constructor(message = 'the file is not a readable video', options?: ErrorOptions) {
    super(message, options);
  }
}

/** ffmpeg exited with an error on an input that probed fine; `stderr` keeps the end of its log. */
export class FfmpegError extends Error {
  override readonly name = 'FfmpegError';

  constructor(
    message: string,
    readonly stderr: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The bytes are not audio in an accepted format (docs/mobile.md, "Studio, voice input, queue position and cancel"), or do not decode. */
export class UnreadableAudioError extends Error {
  override readonly name = 'UnreadableAudioError';
}

/** The recording is longer than the service takes. */
export class AudioTooLongError extends Error {
  override readonly name = 'AudioTooLongError';

  constructor(readonly maxS: number) {
    super(`the recording is longer than ${maxS} s`);
  }
}
