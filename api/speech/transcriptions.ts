import path from 'node:path';
import { decodeForSpeech, probeAudioFile } from '../../media/audio';
import { AudioTooLongError, UnreadableAudioError } from '../../media/errors';
import { withTempDir } from '../../media/temp-dir';
import { requestTranscription } from '../../clients/providers/speech-client';
import type { ApiContext } from '../http/context';
import { errors, invalidField } from '../http/errors';
import { receiveUpload } from '../http/multipart';

/** Decisions.md 7.4: a recording is at most 10 MB and 120 s. */
const maxRecordingBytes = 10 * 1024 * 1024;
const maxRecordingS = 120;

export interface Transcription {
  text: string;
  language: 'ru' | 'en';
  duration_ms: number;
}

/** Spreads recognition over the configured provider accounts (it holds no pool slot: it is short and synchronous). */
let nextAccount = 0;

/**
 * `POST /v1/speech/transcriptions`: the upload is streamed to a temporary file under the 10 MB cap
 * (413 the moment it goes beyond), then, in order: `language` is `ru` or `en` (422), the file is not
 * empty (422), its format is read from the content (415), its stated and then its decoded length is
 * within 120 s (413), and the audio decodes (415). The 16 kHz mono WAV goes to the provider's
 * transcription endpoint within SPEECH_DEADLINE_MS; late or down is `503 provider_unavailable`.
 * Free: no credits move. Nothing is kept once answered.
 */
export async function transcribeUpload(ctx: ApiContext): Promise<Transcription> {
  const { config, log } = ctx.services;
  return withTempDir(async (dir) => {
    const upload = await receiveUpload(ctx, {
      fileField: 'audio',
      maxFileBytes: maxRecordingBytes,
      into: path.join(dir, 'recording'),
      tooLarge: `The recording is larger than ${maxRecordingBytes / 1024 / 1024} MB.`,
    });
    const language = upload.fields.language ?? null;
    if (language !== null && language !== 'ru' && language !== 'en') throw invalidField(['body', 'language'], 'must be ru or en', 'enum');
    if (!upload.file) throw invalidField(['body', 'audio'], 'the recording is missing', 'missing');
    if (upload.file.bytes === 0) throw invalidField(['body', 'audio'], 'the recording is empty', 'empty_file');

    let audio;
    try {
      const probe = await probeAudioFile(upload.file.path);
      if (probe.statedDurationS !== null && probe.statedDurationS > maxRecordingS) throw new AudioTooLongError(maxRecordingS);
      audio = await decodeForSpeech(upload.file.path, path.join(dir, 'speech.wav'), maxRecordingS);
    } catch (error) {
      if (error instanceof AudioTooLongError) throw errors.payloadTooLarge(`The recording is longer than ${maxRecordingS} s.`);
      if (error instanceof UnreadableAudioError) throw errors.unsupportedMediaType(`The recording is not readable audio in an accepted format (WAV, MP3, OGG/Opus, WebM/Opus, M4A/AAC, FLAC).`);
      throw error;
    }

    // The transcription endpoint is the simulator's protocol: its accounts only.
    const accounts = config.generations.providerAccounts.filter((account) => account.kind === 'simulator');
    if (!config.providerUrl || !accounts.length) throw errors.providerUnavailable('Speech recognition is not configured.');
    const account = accounts[nextAccount++ % accounts.length];
    const outcome = await requestTranscription(config.providerUrl, account, { wav: audio.wav, language }, config.speechDeadlineMs);
    if (outcome.kind === 'unavailable') {
      log.warn({ reason: outcome.reason }, 'speech recognition unavailable');
      throw errors.providerUnavailable('Speech recognition is unavailable or late; try again.');
    }
    return { text: outcome.text, language: outcome.language ?? language ?? 'ru', duration_ms: audio.durationMs };
  });
}
