import { rowStreamRoute } from '../realtime/row-stream';

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

export const generationStreamRoute = rowStreamRoute<GenerationState>(
  '/v1/generations/{id}/stream',
  'SSE: a snapshot `event: status` {id, status, error_code}, then one per change; closed at succeeded or failed.',
  {
    200: {
      description: 'Event stream: `event: status` + `data: {"id", "status", "error_code"}` per state, `: ping` comments between',
      contentType: 'text/event-stream',
      schema: { type: 'string' },
    },
    404: { description: 'Absent or another user\'s generation' },
  },
  {
    kind: 'generation', channel: 'generation_status', table: 'generations', columns: ['id', 'status', 'error_code'],
    isTerminal: (state) => terminalStatuses.has(state.status),
    event: 'status',
    render: (state) => ({ id: state.id, status: state.status, error_code: state.error_code }),
  },
);
