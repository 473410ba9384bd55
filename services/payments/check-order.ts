import type { Services } from '..';
import { applyProcessorOrder } from './apply-order';
import type { PaymentRow } from '../../db/payments/model';
import { ProcessorRejectedError, ProcessorUnavailableError } from '../../clients/payment-processor/errors';
import { isOutage } from '../../common/circuit';

export type CheckOutcome = 'applied' | 'unavailable' | 'refused' | 'no_order';

/**
 * Asks the processor for the payment's order and applies its state. Never throws for the processor's
 * sake: the caller learns whether the processor answered, and the payment waits for the next check.
 */
export async function checkOrder(services: Services, payment: PaymentRow): Promise<CheckOutcome> {
  if (!payment.processor_order_id) return 'no_order';
  let order;
  try {
    order = await services.paymentProcessor.getOrder(payment.processor_order_id);
  } catch (error) {
    if (error instanceof ProcessorUnavailableError) {
      // The processor's circuit warns once about an outage; each check it failed is only told.
      services.log[isOutage(error) ? 'info' : 'warn']({ paymentId: payment.id, err: error }, 'payments: processor unavailable for a status check');
      return 'unavailable';
    }
    if (error instanceof ProcessorRejectedError) {
      services.log.error({ paymentId: payment.id, err: error }, 'payments: processor refused a status check');
      return 'refused';
    }
    throw error;
  }
  await applyProcessorOrder(services, payment, order);
  return 'applied';
}
