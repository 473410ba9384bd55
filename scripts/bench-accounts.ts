import type http from 'node:http';
import { hashPassword, verifyPassword } from '../api/accounts/passwords';
import { formatLoad, runLoad, runLoops, send, type LoadOptions, type LoadResult } from './load';

/**
 * Accounts under concurrency: guest sign-in, login, refresh and `GET /v1/me`, each beside the bare
 * Koa baseline measured in the same run. Login is dominated by argon2id (19 MiB, t=2), by design.
 */
const json = { 'content-type': 'application/json' };

async function postJson(agent: http.Agent, url: string, path: string, body: unknown, token?: string) {
  const headers: Record<string, string> = { ...json, ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const answer = await send(agent, url, { method: 'POST', path, headers, body: JSON.stringify(body) });
  return { status: answer.status, body: answer.body ? JSON.parse(answer.body) : null };
}

export async function benchAccounts(webUrl: string, baseline: LoadResult, options: LoadOptions = { concurrency: 16, durationMs: 3000 }): Promise<void> {
  const run = `${process.pid}-${Date.now()}`;
  const results: [string, LoadResult][] = [];

  results.push(['POST /v1/auth/anonymous (new device each)', await runLoad(webUrl, (index) => ({
    method: 'POST', path: '/v1/auth/anonymous', headers: json, body: JSON.stringify({ device_id: `bench-${run}-${index}` }),
  }), options)]);

  const email = `bench-${run}@example.com`;
  const password = 'bench-password-123';
  const setupAgent = new (await import('node:http')).Agent({ keepAlive: true });
  const registered = await postJson(setupAgent, webUrl, '/v1/auth/register', { email, password, device_id: `bench-${run}-login` });
  if (registered.status !== 201) throw new Error(`bench: register answered ${registered.status}`);
  results.push(['POST /v1/auth/login (argon2id verify)', await runLoad(webUrl, () => ({
    method: 'POST', path: '/v1/auth/login', headers: json, body: JSON.stringify({ email, password, device_id: `bench-${run}-login` }),
  }), options)]);
  const argon2Alone = await argon2VerifiesPerSecond(password, options.durationMs ?? 3000);

  // Each loop keeps its own session: a refresh rotates the token it was given.
  const sessions = await Promise.all(Array.from({ length: options.concurrency ?? 16 }, async (_, loop) => {
    const answer = await postJson(setupAgent, webUrl, '/v1/auth/anonymous', { device_id: `bench-${run}-session-${loop}` });
    return { device: `bench-${run}-session-${loop}`, refresh: answer.body.refresh_token as string, access: answer.body.access_token as string };
  }));
  results.push(['POST /v1/auth/refresh (rotation)', await runLoops(async (loop, agent) => {
    const session = sessions[loop];
    const answer = await postJson(agent, webUrl, '/v1/auth/refresh', { refresh_token: session.refresh, device_id: session.device });
    if (answer.status !== 200) return false;
    session.refresh = answer.body.refresh_token;
    session.access = answer.body.access_token;
    return true;
  }, options)]);
  results.push(['GET /v1/me', await runLoops(async (loop, agent) =>
    (await send(agent, webUrl, { path: '/v1/me', headers: { authorization: `Bearer ${sessions[loop].access}` } })).status === 200, options)]);
  setupAgent.destroy();

  console.log(`\n## Accounts under concurrency ${options.concurrency ?? 16} (bare Koa baseline: ${baseline.rps} req/s, p50 ${baseline.p50Ms} ms)`);
  for (const [name, result] of results) {
    console.log(`${formatLoad(name, result)}   ${(result.rps / baseline.rps * 100).toFixed(1)}% of bare Koa`);
  }
  const login = results.find(([name]) => name.startsWith('POST /v1/auth/login'))![1];
  console.log(`argon2id verify alone (same parameters, 4 threads, this process): ${argon2Alone} verifies/s; login reaches ${(login.rps / argon2Alone * 100).toFixed(0)}% of it: its cost is argon2`);
}

/** What the machine can do of argon2id verification alone, with the service's parameters. */
async function argon2VerifiesPerSecond(password: string, durationMs: number): Promise<number> {
  const hash = await hashPassword(password);
  let verified = 0;
  const ends = Date.now() + durationMs;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (Date.now() < ends) {
      await verifyPassword(hash, password);
      verified += 1;
    }
  }));
  return Math.round(verified / (durationMs / 1000));
}
