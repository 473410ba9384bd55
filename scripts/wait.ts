/**
 * The one way tests and benchmarks wait for something that happens in the background: polls `probe` every
 * `intervalMs` until `accept` holds for its value (by default: the value is truthy) and answers that
 * value; fails after `timeoutMs` with the last value it saw.
 */
export async function eventually<T>(probe: () => T | Promise<T>, accept: (value: T) => boolean = Boolean, timeoutMs = 5000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
