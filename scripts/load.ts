import http from 'node:http';

/**
 * A small closed-loop load generator: `concurrency` loops send requests back to back for
 * `durationMs` over keep-alive connections, after a short warm-up. Enough to compare two
 * servers measured in the same run; no absolute claims.
 */
export interface LoadResult {
  requests: number;
  errors: number;
  rps: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
}

export interface LoadRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

function percentile(sorted: number[], fraction: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

function send(agent: http.Agent, base: URL, request: LoadRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      { agent, host: base.hostname, port: base.port, method: request.method ?? 'GET', path: request.path, headers: request.headers },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

export async function runLoad(
  baseUrl: string,
  next: (index: number) => LoadRequest,
  options: { concurrency?: number; durationMs?: number; warmupMs?: number; okStatus?: (status: number) => boolean } = {},
): Promise<LoadResult> {
  const { concurrency = 32, durationMs = 5000, warmupMs = 1000, okStatus = (status) => status < 400 } = options;
  const base = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies: number[] = [];
  let errors = 0;
  let counter = 0;
  let measuring = false;
  const warmupEnds = Date.now() + warmupMs;
  const ends = warmupEnds + durationMs;
  setTimeout(() => { measuring = true; }, warmupMs);

  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < ends) {
      const started = process.hrtime.bigint();
      let ok = false;
      try {
        ok = okStatus(await send(agent, base, next(counter++)));
      } catch {
        ok = false;
      }
      if (!measuring || Date.now() > ends) continue;
      if (ok) latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
      else errors += 1;
    }
  }));
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    rps: Math.round(latencies.length / (durationMs / 1000)),
    p50Ms: round(percentile(latencies, 0.5)),
    p95Ms: round(percentile(latencies, 0.95)),
    p99Ms: round(percentile(latencies, 0.99)),
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

export function formatLoad(name: string, result: LoadResult): string {
  return `${name.padEnd(44)} ${String(result.rps).padStart(7)} req/s   p50 ${result.p50Ms} ms   p95 ${result.p95Ms} ms   p99 ${result.p99Ms} ms${result.errors ? `   errors ${result.errors}` : ''}`;
}

/**
 * Measures a baseline and a subject in alternating rounds (A B A B …) so drift in machine load
 * touches both alike, and keeps each one's best round.
 */
export async function compareLoads(
  baseline: () => Promise<LoadResult>,
  subject: () => Promise<LoadResult>,
  rounds = 2,
): Promise<{ baseline: LoadResult; subject: LoadResult; ratio: number }> {
  let best: { baseline: LoadResult | null; subject: LoadResult | null } = { baseline: null, subject: null };
  for (let round = 0; round < rounds; round += 1) {
    const a = await baseline();
    const b = await subject();
    best = {
      baseline: !best.baseline || a.rps > best.baseline.rps ? a : best.baseline,
      subject: !best.subject || b.rps > best.subject.rps ? b : best.subject,
    };
  }
  return { baseline: best.baseline!, subject: best.subject!, ratio: best.subject!.rps / best.baseline!.rps };
}
