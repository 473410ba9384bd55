import { voiceBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { transcribeUpload } from './transcriptions';

/** Voice input (docs/mobile.md, "Studio, voice input, queue position and cancel"). */
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
        schema: schema.response({ text: schema.string(), language: schema.string({ enum: ['ru', 'en'] }), duration_ms: schema.integer({ minimum: 1 }) }, { title: 'Transcription' }),
        example: { text: 'Сделай фон зимним лесом', language: 'ru', duration_ms: 2350 },
      },
    },
    errors: {
      payload_too_large: 'The recording is above 10 MB (answered as soon as it passes 10 MB; the connection closes when the upload ends) or longer than 120 s.',
      unsupported_media_type: 'Not one of the accepted formats, or unreadable as audio.',
      validation_error: 'No file in `audio`, an empty file, or a `language` other than `ru` or `en`.',
      rate_limited: 'Past the per-user voice budget (10 a minute by default), with `Retry-After`.',
      provider_unavailable: 'Recognition is down, refuses, or did not answer in time: offer to type instead.',
    },
    handler: async (ctx) => {
      ctx.body = await transcribeUpload(ctx);
    },
  }),
];
