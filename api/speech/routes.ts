import { voiceBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../http/validation';
import { transcribeUpload } from './transcriptions';

/** Voice input (decisions.md 7.4). */
export const speechRoutes = [
  defineRoute({
    method: 'POST', path: '/v1/speech/transcriptions', access: 'registered', limits: [voiceBudget()],
    summary: 'Transcribes a voice recording (WAV, MP3, OGG/Opus, WebM/Opus, M4A/AAC or FLAC, read from the content; at most 10 MB and 120 s); free.',
    streamedBody: {
      contentType: 'multipart/form-data',
      schema: schema.object({
        audio: { type: 'string', contentMediaType: 'application/octet-stream', description: 'the recording' },
        language: schema.string({ enum: ['ru', 'en'] }),
      }, ['audio']),
    },
    responses: {
      200: {
        description: 'Transcription',
        schema: schema.object({ text: schema.string(), language: schema.string({ enum: ['ru', 'en'] }), duration_ms: schema.integer({ minimum: 1 }) }),
      },
      413: { description: 'payload_too_large: above 10 MB or 120 s' },
      415: { description: 'unsupported_media_type: not an accepted format, or unreadable as audio' },
      422: { description: 'validation_error: no file in `audio`, an empty file, or `language` other than ru/en' },
      429: { description: 'rate_limited: the per-user voice budget (10 a minute by default)' },
      503: { description: 'provider_unavailable: recognition down or later than SPEECH_DEADLINE_MS' },
    },
    handler: async (ctx) => {
      ctx.body = await transcribeUpload(ctx);
    },
  }),
];
