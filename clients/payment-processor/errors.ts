export type ProcessorCall = 'register' | 'status' | 'charge';

/** No usable answer: timeout, network error, 5xx or an answer we cannot read. Maps to `503 provider_unavailable`. */
export class ProcessorUnavailableError extends Error {
  constructor(readonly call: ProcessorCall, reason: string, options?: { cause?: unknown }) {
    super(`payment processor unavailable (${call}): ${reason}`, options);
    this.name = 'ProcessorUnavailableError';
  }
}

/** The processor answered and refused the request with its own error code. */
export class ProcessorRejectedError extends Error {
  constructor(readonly call: ProcessorCall, readonly code: string, readonly processorMessage: string) {
    super(`payment processor refused (${call}): error ${code}: ${processorMessage}`);
    this.name = 'ProcessorRejectedError';
  }
}
