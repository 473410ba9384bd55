/**
 * What a webhook check reads from the provider and keeps (Replicate's secrets, fal's keys): read on
 * first use and kept `ttlMs`; read again early after a signature none of them made (a rotated key),
 * at most once every `refreshMinMs`, so forged calls cannot make us hammer the provider. Callers that
 * ask together share one read.
 */
export class KeptRead<T> {
  private kept: { value: T; at: number } | null = null;
  private reading: Promise<T> | null = null;
  private readAt = 0;

  /** `read` gets what was kept before (null the first time), to keep it when the provider does not answer. */
  constructor(
    private readonly read: (kept: T | null) => Promise<T>,
    private readonly options: { ttlMs: number; refreshMinMs: number },
  ) {}

  current(): Promise<T> {
    if (this.kept && Date.now() - this.kept.at < this.options.ttlMs) return Promise.resolve(this.kept.value);
    return this.readNow();
  }

  /** Read again, or null when the last read was too recent to ask again. */
  async refreshed(): Promise<T | null> {
    if (Date.now() - this.readAt < this.options.refreshMinMs) return null;
    return this.readNow();
  }

  private readNow(): Promise<T> {
    this.reading ??= (async () => {
      this.readAt = Date.now();
      const value = await this.read(this.kept?.value ?? null);
      this.kept = { value, at: Date.now() };
      return value;
    })().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }
}
