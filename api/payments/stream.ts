import { terminalStatuses, type PaymentStatus } from '../../db/payments/model';
import { schema } from '../../common/validation';
import { rowStreamRoute } from '../realtime/row-stream';

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

export const paymentStatusSchema = schema.string({ enum: ['created', 'succeeded', 'failed', 'expired', 'refunded'] satisfies PaymentStatus[] });

const paymentStreamEventSchema = {
  ...schema.response({ id: schema.uuid(), status: paymentStatusSchema, paid_at: schema.nullable(schema.string({ format: 'date-time' })) }, { title: 'PaymentStreamEvent' }),
  description: 'The `data` of each event of `GET /v1/payments/{id}/stream`: bare `data:` lines, no `event:` line (`message` events).',
};

export const paymentStreamRoute = rowStreamRoute<PaymentState>(
  '/v1/payments/{id}/stream',
  'SSE: one `data:` line {id, status, paid_at} per state, a snapshot first; closed at succeeded or refunded.',
  {
    description: 'Event stream: `data: {"id", "status", "paid_at"}` per state (no event name), `: ping` comments between',
    example: 'data: {"id":"2b7e4f1a-9c3d-4e5f-8a6b-7c8d9e0f1a2b","status":"created","paid_at":null}\n\ndata: {"id":"2b7e4f1a-9c3d-4e5f-8a6b-7c8d9e0f1a2b","status":"succeeded","paid_at":"2026-11-23T12:03:10.000Z"}\n\n',
  },
  {
    kind: 'payment', channel: 'payment_status', table: 'payments', columns: ['id', 'status', 'paid_at'],
    isTerminal: (state) => terminalStatuses.includes(state.status),
    event: null,
    render: (state) => ({ id: state.id, status: state.status, paid_at: state.paid_at?.toISOString() ?? null }),
    eventSchema: paymentStreamEventSchema,
  },
);
