/**
 * Client traffic that records every answer: guest apps reading their profile, history, catalog and
 * balance and signing new devices in, back to back, through a fault. Each answer is kept with its
 * time, so the suite can say what clients saw while Postgres restarted.
 */
export interface ProbeAnswer {
  at: number;
  request: string;
  /** The HTTP status, or 0 when the request got no answer at all (refused, reset). */
  status: number;
  retryAfter: string | null;
  code: string | null;
}

export interface Probe {
  answers: ProbeAnswer[];
  stop(): Promise<void>;
}

interface Step {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: object;
  token: boolean;
}

const steps: Step[] = [
  { name: 'GET /v1/me', method: 'GET', path: '/v1/me', token: true },
  { name: 'GET /v1/generations', method: 'GET', path: '/v1/generations?limit=5', token: true },
  { name: 'GET /v1/effects', method: 'GET', path: '/v1/effects?limit=5', token: false },
  { name: 'GET /v1/credits/balance', method: 'GET', path: '/v1/credits/balance', token: true },
  { name: 'POST /v1/auth/anonymous', method: 'POST', path: '/v1/auth/anonymous', token: false },
];

export async function startProbe(baseUrl: string, loops: number, runId: string): Promise<Probe> {
  const answers: ProbeAnswer[] = [];
  let stopped = false;
  let devices = 0;
  const signIn = async (): Promise<string> => {
    const response = await fetch(`${baseUrl}/v1/auth/anonymous`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: `chaos-probe-${runId}-${(devices += 1)}` }),
    });
    if (response.status !== 200) throw new Error(`probe sign-in answered ${response.status}`);
    return ((await response.json()) as { access_token: string }).access_token;
  };
  const loop = async (token: string) => {
    for (let index = 0; !stopped; index += 1) {
      const step = steps[index % steps.length];
      const body = step.path === '/v1/auth/anonymous' ? { device_id: `chaos-probe-${runId}-${(devices += 1)}` } : step.body;
      const at = Date.now();
      try {
        const response = await fetch(`${baseUrl}${step.path}`, {
          method: step.method,
          headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(step.token ? { authorization: `Bearer ${token}` } : {}) },
          body: body ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(15_000),
        });
        const text = await response.text();
        let code: string | null = null;
        if (response.status >= 400) {
          try {
            code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
          } catch {
            code = null;
          }
        }
        answers.push({ at, request: step.name, status: response.status, retryAfter: response.headers.get('retry-after'), code });
      } catch {
        answers.push({ at, request: step.name, status: 0, retryAfter: null, code: null });
      }
      // Paced like a busy app, not a flood: the machine also runs every process of the cluster.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const tokens = await Promise.all(Array.from({ length: loops }, signIn));
  const running = tokens.map(loop);
  return {
    answers,
    stop: async () => {
      stopped = true;
      await Promise.all(running);
    },
  };
}
