import type { Channel } from '../../db/channels';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { readBudget } from '../http/rate-limit';
import { defineRoute, type Route, type RouteResponse } from '../http/route';
import { isUuid, type JsonSchema } from '../../common/validation';
import { openStream, type StreamKind } from './streams';

/**
 * A stream of one row of the caller (a generation, a payment): the columns it shows, read for the
 * snapshot and again at every change its channel announces.
 */
export interface RowStream<State> {
  kind: StreamKind;
  /** Who may open it: any token (the default) or a registered account only (guests `403 registration_required`). */
  access?: 'token' | 'registered';
  channel: Channel;
  table: string;
  columns: (keyof State & string)[];
  isTerminal(state: State): boolean;
  /** `StreamSpec.finalState`: a final state read from its announcement, without a reread. */
  finalState?(announcement: Record<string, unknown>): State | null;
  /** The `event:` name, or null for bare `data:` lines. */
  event: string | null;
  render(state: State): object;
  /** The schema of what `render` answers, titled: a generated client gets the event's type by this name. */
  eventSchema: JsonSchema;
}

/** What Server-Sent Events call an event that has no `event:` line (`EventSource.onmessage`). */
const unnamedEvent = 'message';

/**
 * `GET <path>` (`.../{id}/stream`) opening a row stream. Any id that cannot name the caller's row is
 * simply not found (the contract's 404, not a 422), and so is another user's.
 */
export function rowStreamRoute<State>(path: string, summary: string, answer: Pick<RouteResponse, 'description' | 'example'>, stream: RowStream<State>): Route {
  return defineRoute<unknown, unknown, { id: string }>({
    method: 'GET', path, access: stream.access ?? 'token', limits: [readBudget()],
    summary,
    responses: {
      200: { contentType: 'text/event-stream', schema: { type: 'string' }, ...answer, events: { [stream.event ?? unnamedEvent]: stream.eventSchema } },
    },
    errors: {
      not_found: `Absent or another user's ${stream.kind.replace('_', ' ')}.`,
      too_many_streams: 'The user has as many streams open as allowed, across kinds and devices: close one first.',
    },
    handler: async (ctx, { params }) => {
      if (!isUuid(params.id)) throw errors.notFound();
      const id = params.id.toLowerCase();
      const userId = caller(ctx).id;
      const { db } = ctx.services;
      const { kind, channel, isTerminal, finalState, event, render } = stream;
      await openStream(ctx, {
        kind,
        channel,
        objectId: id,
        userId,
        isTerminal,
        finalState,
        event,
        render,
        snapshot: () => db(stream.table).where({ id, user_id: userId }).first(...stream.columns).then((row: State | undefined) => row ?? null),
      });
    },
  });
}
