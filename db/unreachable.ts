/**
 * Whether an error means a backing service (the database above all) could not be reached, or went
 * away in the middle of a statement: Postgres restarting or shutting down, a refused or reset
 * connection, a pool that could not get a connection in time. Such an error says nothing about the
 * request; the same request succeeds once the database is back. The API answers it `503` with
 * `Retry-After` (`api/http/error-envelope.ts`); the workers wait it out (`untilReachable`).
 */
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** SQLSTATE: admin_shutdown, crash_shutdown, cannot_connect_now (starting or stopping), too_many_connections. */
const unavailableStates = new Set(['57P01', '57P02', '57P03', '53300']);
/** What `pg`, knex and the LISTEN hub say when the connection is gone; they carry no code. */
const connectionLost = /Connection terminated|not queryable|Timeout acquiring a connection|timeout exceeded when trying to connect|listen connection unavailable/i;

export function isUnreachable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Object && depth < 5; current = (current as { cause?: unknown }).cause, depth += 1) {
    const { code, name, message, syscall } = current as { code?: unknown; name?: unknown; message?: unknown; syscall?: unknown };
    if (typeof code === 'string' && (networkCodes.has(code) || unavailableStates.has(code) || code.startsWith('08'))) return true;
    // A Unix socket whose server is down is a file that is not there.
    if (code === 'ENOENT' && syscall === 'connect') return true;
    if (name === 'KnexTimeoutError') return true;
    if (typeof message === 'string' && connectionLost.test(message)) return true;
  }
  return false;
}

/**
 * Runs `work`, and again while it fails because the database is unreachable (backing off from
 * 100 ms to 2 s), for up to `budgetMs`; any other error, or the last one, is thrown. For a step whose
 * outcome must be recorded once the database is back: an accepted provider task, a job's end.
 */
export async function untilReachable<T>(work: () => Promise<T>, budgetMs: number): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      const waitMs = Math.min(2000, 100 * 2 ** attempt);
      if (!isUnreachable(error) || Date.now() + waitMs > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
