import { schema } from '../../common/validation';
import { rowStreamRoute } from '../realtime/row-stream';
import { generationStatusSchema } from './views';

/**
 * `GET /v1/generations/{id}/stream`: `event: status` with `{id, status, error_code}` (never
 * `result_url`: the client fetches the detail for it), closed at `succeeded` or `failed`. The
 * generation pipeline announces every status change on `generation_status` in the same transaction,
 * with the status and error code: a terminal one is shown as announced, without reading the row.
 */
const terminalStatuses = new Set(['succeeded', 'failed']);

interface GenerationState {
  id: string;
  status: string;
  error_code: string | null;
}

const generationStreamEventSchema = {
  ...schema.response({ id: schema.uuid(), status: generationStatusSchema, error_code: schema.nullable(schema.string()) }, { title: 'GenerationStreamEvent' }),
  description: 'The `data` of each `event: status` of `GET /v1/generations/{id}/stream`: no `result_url` (read the generation for it).',
};

export const generationStreamRoute = rowStreamRoute<GenerationState>(
  '/v1/generations/{id}/stream',
  'SSE: a snapshot `event: status` {id, status, error_code}, then one per change; closed at succeeded or failed.',
  {
    description: 'Event stream: `event: status` + `data: {"id", "status", "error_code"}` per state, `: ping` comments between',
    example: 'event: status\ndata: {"id":"6a0f9e8d-7c6b-4a5f-8e3d-2c1b0a9f8e7d","status":"pending","error_code":null}\n\nevent: status\ndata: {"id":"6a0f9e8d-7c6b-4a5f-8e3d-2c1b0a9f8e7d","status":"succeeded","error_code":null}\n\n',
  },
  {
    kind: 'generation', channel: 'generation_status', table: 'generations', columns: ['id', 'status', 'error_code'],
    isTerminal: (state) => terminalStatuses.has(state.status),
    // succeeded and failed are never left: their announcement says all the stream shows.
    finalState: ({ id, status, error_code: errorCode }) => (typeof id === 'string' && typeof status === 'string' && terminalStatuses.has(status)
      && (errorCode === null || typeof errorCode === 'string') ? { id, status, error_code: errorCode } : null),
    event: 'status',
    render: (state) => ({ id: state.id, status: state.status, error_code: state.error_code }),
    eventSchema: generationStreamEventSchema,
  },
);
