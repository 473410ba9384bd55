import type { ProcessorState } from './payment-processor';
import { ActionCode, OrderStatus } from './protocol';

interface Rule {
  status?: number;
  actionCode?: number;
  chargeback?: true;
  state: ProcessorState;
}

/** First matching row wins; a missing field matches anything. */
const rules: Rule[] = [
  // A disputed payment is lost money whatever status the processor still shows.
  { chargeback: true, state: 'refunded' },
  { status: OrderStatus.registered, state: 'created' },
  // Not captured yet: credits only follow a capture.
  { status: OrderStatus.preAuthorized, state: 'created' },
  { status: OrderStatus.acsAuthorization, state: 'created' },
  { status: OrderStatus.deposited, state: 'succeeded' },
  // Orders are one-stage, so a reversal cancels a captured payment: the money went back.
  { status: OrderStatus.reversed, state: 'refunded' },
  { status: OrderStatus.refunded, state: 'refunded' },
  { status: OrderStatus.declined, actionCode: ActionCode.sessionExpired, state: 'expired' },
  { status: OrderStatus.declined, state: 'failed' },
];

/** Our state for a processor status answer, or null for a status the processor should never report. */
export function processorState(status: number, actionCode: number, chargeback: boolean): ProcessorState | null {
  const rule = rules.find((candidate) =>
    (candidate.status === undefined || candidate.status === status)
    && (candidate.actionCode === undefined || candidate.actionCode === actionCode)
    && (candidate.chargeback === undefined || chargeback));
  return rule?.state ?? null;
}
