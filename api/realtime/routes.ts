import { generationStreamRoute } from '../generations/stream';

/** The SSE endpoints built on the stream mechanism (the payment stream lives with payments). */
export const realtimeRoutes = [generationStreamRoute];
