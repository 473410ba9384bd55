import type { Knex } from 'knex';
import type { Config } from '../../config';
import { Circuits } from '../../common/circuit';
import type { Logger } from '../../common/logger';
import { createPaymentProcessor } from '../../clients/payment-processor/create-payment-processor';
import type { PaymentProcessor } from '../../clients/payment-processor/payment-processor';
import { postgresCircuitStores } from '../../db/circuits/circuit-store';

/**
 * The payment processor client of a process, its circuit kept in Postgres. Every role calls the one
 * processor (creation waits up to PAYMENT_REGISTER_TIMEOUT_MS for it), so a circuit per process
 * would make each web, scheduler and worker process learn an outage again, with a payer waiting out
 * the timeout each time, and warn once each; in Postgres the fleet learns it once, from one warning,
 * at the cost of a primary-key read per call, small beside the processor's own answer.
 */
export function paymentProcessorOf(config: Config, db: Knex, log: Logger): PaymentProcessor {
  return createPaymentProcessor(config, new Circuits({ settings: config.circuits, log, stores: postgresCircuitStores(db) }));
}
