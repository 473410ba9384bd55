import type { Knex } from 'knex';
import { terminalStatuses, type PaymentStatus } from '../../db/payments/model';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { readBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema, isUuid } from '../http/validation';
import { openStream, type StreamSpec } from '../realtime/streams';

/**
 * `GET /v1/payments/{id}/stream`: one bare `data:` line per state `{id, status, paid_at}` (the
 * contract names no event), a snapshot first; closed at `succeeded` and `refunded`, kept open at
 * `failed` and `expired`, because the payer may still pay on the processor's page.
 */
interface PaymentState {
  id: string;
  status: PaymentStatus;
  paid_at: Date | null;
}

function readPaymentState(db: Knex, id: string, userId: string): Promise<PaymentState | null> {
  return db('payments')
    .where({ id, user_id: userId })
    .first('id', 'status', 'paid_at')
    .then((row: PaymentState | undefined) => row ?? null);
}

export function paymentStreamSpec(db: Knex, id: string, userId: string): StreamSpec<PaymentState> {
  return {
    kind: 'payment',
    channel: 'payment_status',
    objectId: id,
    userId,
    snapshot: () => readPaymentState(db, id, userId),
    isTerminal: (state) => terminalStatuses.includes(state.status),
    event: null,
    render: (state) => ({ id: state.id, status: state.status, paid_at: state.paid_at?.toISOString() ?? null }),
  };
}

export const paymentStreamRoute = defineRoute<unknown, unknown, { id: string }>({
  method: 'GET',
  path: '/v1/payments/{id}/stream',
  summary: 'SSE: one `data:` line {id, status, paid_at} per state, a snapshot first; closed at succeeded or refunded.',
  access: 'token',
  limits: [readBudget()],
  params: schema.object({ id: schema.string() }, ['id']),
  responses: {
    200: { description: 'Event stream', contentType: 'text/event-stream' },
    404: { description: 'Absent or another user\'s payment' },
    429: { description: '`rate_limited`, or `too_many_streams` past the per-user cap of open streams' },
  },
  handler: async (ctx, { params }) => {
    if (!isUuid(params.id)) throw errors.notFound();
    await openStream(ctx, paymentStreamSpec(ctx.services.db, params.id.toLowerCase(), caller(ctx).id));
  },
});
