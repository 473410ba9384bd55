import type { Knex } from 'knex';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { readBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { isUuid } from '../http/validation';
import { openStream, type StreamSpec } from '../realtime/streams';

/**
 * `GET /v1/generations/{id}/stream`: `event: status` with `{id, status, error_code}` (never
 * `result_url`: the client fetches the detail for it), closed at `succeeded` or `failed`. The
 * generation pipeline announces every status change on `generation_status` in the same transaction.
 */
const terminalStatuses = new Set(['succeeded', 'failed']);

interface GenerationState {
  id: string;
  status: string;
  error_code: string | null;
}

/** The caller's generation as the stream shows it, or null when absent or someone else's. */
export function readGenerationState(db: Knex, id: string, userId: string): Promise<GenerationState | null> {
  return db('generations')
    .where({ id, user_id: userId })
    .first('id', 'status', 'error_code')
    .then((row: GenerationState | undefined) => row ?? null);
}

export function generationStreamSpec(db: Knex, id: string, userId: string): StreamSpec<GenerationState> {
  return {
    kind: 'generation',
    channel: 'generation_status',
    objectId: id,
    userId,
    snapshot: () => readGenerationState(db, id, userId),
    isTerminal: (state) => terminalStatuses.has(state.status),
    event: 'status',
    render: (state) => ({ id: state.id, status: state.status, error_code: state.error_code }),
  };
}

export const generationStreamRoute = defineRoute<unknown, unknown, { id: string }>({
  method: 'GET',
  path: '/v1/generations/{id}/stream',
  summary: 'SSE: a snapshot `event: status` {id, status, error_code}, then one per change; closed at succeeded or failed.',
  access: 'token',
  limits: [readBudget()],
  responses: {
    200: {
      description: 'Event stream: `event: status` + `data: {"id", "status", "error_code"}` per state, `: ping` comments between',
      contentType: 'text/event-stream',
      schema: { type: 'string' },
    },
    404: { description: 'Absent or another user\'s generation' },
    429: { description: '`rate_limited`, or `too_many_streams` past the per-user cap of open streams' },
  },
  handler: async (ctx, { params }) => {
    // Any id that cannot name a generation is simply not found (the contract's 404, not a 422).
    if (!isUuid(params.id)) throw errors.notFound();
    await openStream(ctx, generationStreamSpec(ctx.services.db, params.id.toLowerCase(), caller(ctx).id));
  },
});
