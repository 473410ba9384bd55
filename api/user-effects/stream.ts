import { streamClosingStatuses, type UserEffectStatus } from '../../db/user-effects/model';
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

export const userEffectStreamRoute = rowStreamRoute<UserEffectState>(
  '/v1/user-effects/{id}/stream',
  'SSE: a snapshot `event: status` {id, status, effect_id}, then one per change; closed at approved, rejected, archived or private.',
  {
    200: {
      description: 'Event stream: `event: status` + `data: {"id", "status", "effect_id"}` per state, `: ping` comments between',
      contentType: 'text/event-stream',
      schema: { type: 'string' },
    },
    403: { description: '`registration_required` for a guest' },
    404: { description: 'Absent or another user\'s user effect' },
  },
  {
    kind: 'user_effect', access: 'registered', channel: 'user_effect_status', table: 'user_effects', columns: ['id', 'status', 'effect_id'],
    isTerminal: (state) => streamClosingStatuses.includes(state.status),
    event: 'status',
    render: (state) => ({ id: state.id, status: state.status, effect_id: state.effect_id }),
  },
);
