import type { ProviderAccount } from './adapter';

/**
 * Speech recognition (docs/mobile.md, "Studio, voice input, queue position and cancel"), a synchronous call with a deadline, to one of two
 * endpoints: the provider's own (`requestTranscription`) or an OpenAI-compatible service
 * (`requestOpenAiTranscription`, TRANSCRIPTION_URL). Anything but a text within the deadline is
 * `unavailable`.
 */
export type TranscriptionOutcome =
  | { kind: 'transcribed'; text: string; language: 'ru' | 'en' | null }
  | { kind: 'unavailable'; reason: string };

export interface OpenAiTranscription {
  /** The base URL with its version: `https://api.openai.com/v1`. */
  url: string;
  model: string;
  apiKey: string | null;
}

/** The provider's endpoint: `POST /v1/transcriptions[?language=ru|en]` with the WAV as the body answers `{text, language, duration_ms}`. */
export function requestTranscription(
  baseUrl: string,
  account: ProviderAccount,
  audio: { wav: Buffer; language: 'ru' | 'en' | null },
  deadlineMs: number,
): Promise<TranscriptionOutcome> {
  const query = audio.language ? `?language=${audio.language}` : '';
  return transcriptionCall(`${baseUrl.replace(/\/+$/, '')}/v1/transcriptions${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'audio/wav', accept: 'application/json' },
    body: audio.wav,
  }, deadlineMs);
}

/**
 * OpenAI's `POST /v1/audio/transcriptions` (its API reference, "Create transcription"; operation
 * `createTranscription` of OpenAI's OpenAPI description): multipart with the recording in `file`,
 * `model`, optional `language` (ISO-639-1) and `response_format: json`, answered `{text}`. Servers
 * that speak the same shape (Groq, a self-hosted Whisper server) take the same request.
 */
export function requestOpenAiTranscription(
  service: OpenAiTranscription,
  audio: { wav: Buffer; language: 'ru' | 'en' | null },
  deadlineMs: number,
): Promise<TranscriptionOutcome> {
  const form = new FormData();
  form.append('file', new Blob([audio.wav], { type: 'audio/wav' }), 'speech.wav');
  form.append('model', service.model);
  if (audio.language) form.append('language', audio.language);
  form.append('response_format', 'json');
  return transcriptionCall(`${service.url.replace(/\/+$/, '')}/audio/transcriptions`, {
    method: 'POST',
    headers: { accept: 'application/json', ...(service.apiKey ? { authorization: `Bearer ${service.apiKey}` } : {}) },
    body: form,
  }, deadlineMs);
}

/** `language` as the answer may name it: a code, or the language's name (OpenAI's `verbose_json`). */
const languages: Record<string, 'ru' | 'en'> = { ru: 'ru', russian: 'ru', en: 'en', english: 'en' };

async function transcriptionCall(url: string, init: RequestInit, deadlineMs: number): Promise<TranscriptionOutcome> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(deadlineMs) });
    const text = await response.text();
    if (!response.ok) return { kind: 'unavailable', reason: `HTTP ${response.status}` };
    const body = JSON.parse(text) as { text?: unknown; language?: unknown };
    if (typeof body.text !== 'string') return { kind: 'unavailable', reason: 'answered without a text' };
    return { kind: 'transcribed', text: body.text, language: (typeof body.language === 'string' && languages[body.language.toLowerCase()]) || null };
  } catch (error) {
    const late = error instanceof Error && error.name === 'TimeoutError';
    return { kind: 'unavailable', reason: late ? `no answer within ${deadlineMs} ms` : `network error: ${String((error as Error).cause ?? error)}` };
  }
}
