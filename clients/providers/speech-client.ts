import type { ProviderAccount } from './adapter';

/**
 * The provider's transcription endpoint (README, "Voice input"), a synchronous call:
 * `POST /v1/transcriptions[?language=ru|en]` with a 16 kHz mono PCM WAV as the body answers
 * `{text, language, duration_ms}`. Anything but that answer within the deadline is `unavailable`.
 */
export type TranscriptionOutcome =
  | { kind: 'transcribed'; text: string; language: 'ru' | 'en' | null }
  | { kind: 'unavailable'; reason: string };

export async function requestTranscription(
  baseUrl: string,
  account: ProviderAccount,
  audio: { wav: Buffer; language: 'ru' | 'en' | null },
  deadlineMs: number,
): Promise<TranscriptionOutcome> {
  const query = audio.language ? `?language=${audio.language}` : '';
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, '')}/v1/transcriptions${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'audio/wav', accept: 'application/json' },
      body: audio.wav,
      signal: AbortSignal.timeout(deadlineMs),
    });
    const text = await response.text();
    if (!response.ok) return { kind: 'unavailable', reason: `HTTP ${response.status}` };
    const body = JSON.parse(text) as { text?: unknown; language?: unknown };
    if (typeof body.text !== 'string') return { kind: 'unavailable', reason: 'answered without a text' };
    return { kind: 'transcribed', text: body.text, language: body.language === 'ru' || body.language === 'en' ? body.language : null };
  } catch (error) {
    const late = error instanceof Error && error.name === 'TimeoutError';
    return { kind: 'unavailable', reason: late ? `no answer within ${deadlineMs} ms` : `network error: ${String((error as Error).cause ?? error)}` };
  }
}
