import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { openSse } from './sse-client';
import { postToTicket } from '../upload-ticket';

/**
 * One simulated app user, as the mobile client behaves: guest sign-in, one photo through the
 * presigned POST, `perUser` generations on the effect, and the stream of each followed to its
 * terminal status (reopened after a break, as the contract tells clients to do).
 */
export interface GenerationRecord {
  id: string;
  user: number;
  /** performance.now() when `POST /v1/generations` answered. */
  createdAt: number;
  /** performance.now() when the stream showed a terminal status. */
  terminalAt: number | null;
  status: string | null;
  errorCode: string | null;
}

export interface ClientStats {
  usersDone: number;
  streamsOpen: number;
  maxStreamsOpen: number;
  streamsOpened: number;
  streamReopens: number;
  streamsRefused: number;
  /** Failed requests by `<step> <status or error>`. */
  failures: Record<string, number>;
}

export interface UserContext {
  baseUrl: string;
  runId: string;
  /** The effects a user launches, in turn: its n-th generation is of `effectIds[n % length]`. */
  effectIds: string[];
  photo: Buffer;
  perUser: number;
  deadline: number;
  stats: ClientStats;
  records: GenerationRecord[];
}

const terminal = new Set(['succeeded', 'failed']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class StepError extends Error {}

async function call<T>(context: UserContext, step: string, url: string, init: { method: string; token?: string; body?: unknown; headers?: Record<string, string> }, expected: number[]): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    let status: string;
    try {
      const response = await fetch(url.startsWith('http') ? url : context.baseUrl + url, {
        method: init.method,
        headers: {
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
          ...init.headers,
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      });
      const text = await response.text();
      if (expected.includes(response.status)) return (text ? JSON.parse(text) : null) as T;
      status = String(response.status);
      // Only answers worth a retry are retried: limits, server errors.
      if (![429, 500, 502, 503].includes(response.status)) attempt = Infinity;
    } catch (error) {
      status = (error as Error).message;
    }
    context.stats.failures[`${step} ${status}`] = (context.stats.failures[`${step} ${status}`] ?? 0) + 1;
    if (attempt >= 5 || Date.now() > context.deadline) throw new StepError(`${step}: ${status}`);
    await sleep(250 * 2 ** attempt);
  }
}

export async function runUser(index: number, context: UserContext): Promise<void> {
  try {
    const session = await call<{ access_token: string }>(context, 'sign-in', '/v1/auth/anonymous', {
      method: 'POST', body: { device_id: `loadtest-${context.runId}-${index}` },
    }, [200]);
    const token = session.access_token;

    const ticket = await call<{ id: string; url: string; fields: Record<string, string> }>(context, 'upload ticket', '/v1/uploads', {
      method: 'POST', token, body: { content_type: 'image/jpeg' },
    }, [201]);
    await uploadPhoto(context, ticket);

    const follows: Promise<void>[] = [];
    for (let number = 0; number < context.perUser; number += 1) {
      const created = await call<{ id: string }>(context, 'create generation', '/v1/generations', {
        method: 'POST', token, body: { effect_id: context.effectIds[number % context.effectIds.length], characters: [[ticket.id]] },
        headers: { 'Idempotency-Key': randomBytes(16).toString('hex') },
      }, [202]);
      const record: GenerationRecord = { id: created.id, user: index, createdAt: performance.now(), terminalAt: null, status: 'pending', errorCode: null };
      context.records.push(record);
      follows.push(follow(context, token, record));
    }
    await Promise.all(follows);
  } catch (error) {
    if (!(error instanceof StepError)) throw error;
  } finally {
    context.stats.usersDone += 1;
  }
}

async function uploadPhoto(context: UserContext, ticket: { url: string; fields: Record<string, string> }): Promise<void> {
  const status = await postToTicket(ticket, context.photo, 'image/jpeg');
  if (status >= 300) {
    context.stats.failures[`upload ${status}`] = (context.stats.failures[`upload ${status}`] ?? 0) + 1;
    throw new StepError(`upload: ${status}`);
  }
}

/** Follows one generation's stream to its terminal status, reopening it after a break or a refusal. */
async function follow(context: UserContext, token: string, record: GenerationRecord): Promise<void> {
  const { stats } = context;
  while (record.terminalAt === null && Date.now() < context.deadline) {
    let connection;
    try {
      connection = await openSse(context.baseUrl, `/v1/generations/${record.id}/stream`, token);
    } catch (error) {
      stats.failures[`stream ${(error as Error).message}`] = (stats.failures[`stream ${(error as Error).message}`] ?? 0) + 1;
      await sleep(500);
      continue;
    }
    if (connection.status !== 200) {
      await connection.ended;
      if (connection.status === 429) stats.streamsRefused += 1;
      else stats.failures[`stream ${connection.status}`] = (stats.failures[`stream ${connection.status}`] ?? 0) + 1;
      await sleep(1000);
      continue;
    }
    stats.streamsOpened += 1;
    stats.streamsOpen += 1;
    stats.maxStreamsOpen = Math.max(stats.maxStreamsOpen, stats.streamsOpen);
    const shown = (data: string, at: number) => {
      const event = JSON.parse(data) as { status: string; error_code: string | null };
      record.status = event.status;
      record.errorCode = event.error_code;
      if (terminal.has(event.status) && record.terminalAt === null) record.terminalAt = at;
    };
    for (const event of connection.events) shown(event.data, event.receivedAt);
    connection.onEvent = (event) => shown(event.data, event.receivedAt);
    const giveUp = setTimeout(() => connection.destroy(), Math.max(0, context.deadline - Date.now()));
    await connection.ended;
    clearTimeout(giveUp);
    stats.streamsOpen -= 1;
    if (record.terminalAt === null) {
      stats.streamReopens += 1;
      await sleep(300);
    }
  }
}
