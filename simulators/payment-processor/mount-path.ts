/**
 * Where the processor simulator is mounted on our own web app. A module of its own: the processor
 * client of every role names it (`create-payment-processor.ts`) without loading the simulator.
 */
export const SIMULATOR_PREFIX = '/sim/processor';
