import { streamClosingStatuses, userEffectStatuses, type UserEffectStatus } from '../../db/user-effects/model';
import { schema } from '../../common/validation';
import { rowStreamRoute } from '../realtime/row-stream';

/**
 * `GET /v1/user-effects/{id}/stream` (contract B): a snapshot `event: status` `{id, status,
 * effect_id}`, then one per change announced on `user_effect_status`; closed at `approved`,
 * `rejected`, `archived` and `private`. Counted against the per-user cap shared by every stream.
 */
interface UserEffectState {
  id: string;
  status: UserEffectStatus;
  effect_id: string | null;
}

const userEffectStreamEventSchema = {
  ...schema.response({
    id: schema.uuid(),
    status: schema.string({ enum: userEffectStatuses }),
    effect_id: schema.nullable(schema.uuid()),
  }, { title: 'UserEffectStreamEvent' }),
  description: 'The `data` of each `event: status` of `GET /v1/user-effects/{id}/stream`: `effect_id` is its catalog effect once approved.',
};

export const userEffectStreamRoute = rowStreamRoute<UserEffectState>(
  '/v1/user-effects/{id}/stream',
  'SSE: a snapshot `event: status` {id, status, effect_id}, then one per change; closed at approved, rejected, archived or private.',
  {
    description: 'Event stream: `event: status` + `data: {"id", "status", "effect_id"}` per state, `: ping` comments between',
    example: 'event: status\ndata: {"id":"2b7e4f1a-9c3d-4e5f-8a6b-7c8d9e0f1a2b","status":"processing","effect_id":null}\n\n'
      + 'event: status\ndata: {"id":"2b7e4f1a-9c3d-4e5f-8a6b-7c8d9e0f1a2b","status":"approved","effect_id":"5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"}\n\n',
  },
  {
    kind: 'user_effect', access: 'registered', channel: 'user_effect_status', table: 'user_effects', columns: ['id', 'status', 'effect_id'],
    isTerminal: (state) => streamClosingStatuses.includes(state.status),
    event: 'status',
    render: (state) => ({ id: state.id, status: state.status, effect_id: state.effect_id }),
    eventSchema: userEffectStreamEventSchema,
  },
);
