import { wavDurationMs } from '../../media/audio';

/**
 * The simulator's speech recognition (docs/mobile.md, "Studio, voice input, queue position and cancel"): deterministic, a text that names the
 * recording's duration, read from the header of the PCM WAV the service sends.
 */
export interface Transcript {
  text: string;
  language: 'ru' | 'en';
  duration_ms: number;
}

/** The transcript of a PCM WAV, or what is wrong with the audio. Without a language it "hears" Russian, the app's default. */
export function transcribe(wav: Buffer, language: string | null): Transcript | string {
  if (language !== null && language !== 'ru' && language !== 'en') return 'language must be ru or en';
  const durationMs = wavDurationMs(wav);
  if (durationMs === null) return 'the audio is not a PCM WAV';
  const heard = language ?? 'ru';
  const seconds = (durationMs / 1000).toFixed(1);
  const text = heard === 'ru'
    ? `Запись длительностью ${seconds.replace('.', ',')} с.`
    : `A recording of ${seconds} seconds.`;
  return { text, language: heard, duration_ms: durationMs };
}
