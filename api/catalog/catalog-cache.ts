import { hash, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Config } from '../../config';
import type { ListenHub } from '../../db/listen-hub';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../common/logger';
import type { ApiContext } from '../http/context';
import { requestIdFrom } from '../http/request-id';
import type { AnsweredRequest } from '../http/request-log';

/**
 * The catalog at memory speed: one web process's cache of catalog answers and of the lists they
 * page through, dropped whole whenever the catalog changes.
 *
 * Every transaction that changes the catalog bumps `catalog_version` and announces it on
 * `catalog_changed` (triggers, migration `catalog_version`); this cache listens on the process's
 * LISTEN hub and empties itself when the announcement arrives, milliseconds after the commit. What
 * was being computed when a change arrived is handed to the requests that asked for it but never
 * stored. While the hub is not listening (not yet subscribed, or its connection lost) nothing is
 * served from memory; after a reconnect the cache starts empty, since announcements were missed.
 *
 * Time still changes two things without a version: the new-effect slots of a category (an effect
 * stops being new) and popularity (success counts bump no version, they change with every
 * generation). An entry says when it stops being true (`Freshness.until`); nothing lives longer than
 * `CATALOG_CACHE_TTL_S` but the parts that neither changes (`untilChanged`: views, the search index,
 * word forms and matches, the flat list), which would otherwise all be made again at once each time.
 *
 * Everything cached is the same for every caller: answers never depend on who asks. Per-user parts
 * (ARCHITECTURE.md, "The catalog cache") are layered on top of a shared answer, never cached in it.
 */
export interface Freshness {
  /** Epoch ms after which the value may be wrong; a computation lowers it (`limitTo`). */
  until: number;
  limitTo(epochMs: number): void;
}

interface Entry {
  value: unknown;
  bytes: number;
  until: number;
  /** When it was last put at the recent end of `entries` (`CatalogCache.moves`). */
  moved: number;
}

/** A catalog answer ready to send: its JSON bytes and strong ETag (a hash of them), or null for `404`. */
export interface CatalogAnswer<T> {
  value: T;
  body: Buffer;
  etag: string;
  /** Where the cache keeps it (`CatalogCache.answer`). */
  key: string;
  /** The body gzipped, made when a client that accepts gzip asks for the kept answer again (`CatalogCache.gzipped`). */
  gzipped?: Buffer;
  askedForGzip?: boolean;
}

/** A catalog answer as it goes out (`CatalogCache.responseTo`): no body for `304`. */
export interface CatalogResponse {
  status: 200 | 304;
  headers: Record<string, string>;
  body: Buffer | null;
}

/** Below this a gzipped answer saves less than its headers and the client's inflating cost. */
const minGzipBytes = 1024;

/** The answer an anonymous GET of a URL was given, by the key it is kept under, and its route's template. */
interface AnsweredUrl {
  answerKey: string;
  route: string;
}

export class CatalogCache {
  /** Which catalog this process has heard of: bumped by every announcement and every reconnect. */
  private epoch = 0;
  private listening = false;
  private subscribing: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;
  /**
   * What answers are made of (`remember`): the lists, the search index, each search word's forms and
   * matches, each effect's view. Costly to make again (a statement each), so an answer never pushes
   * one out.
   */
  private readonly parts = new Segment();
  /** Whole answers (`answer`): made again from the parts at the cost of a join, so they give way first. */
  private readonly answers = new Segment();
  /** Computations under way, per epoch and key: a burst of misses for one key computes it once. */
  private computing = new Map<string, Promise<{ value: unknown; until: number }>>();
  private readonly probes = new Map<string, () => void>();
  /** The highest catalog version announced to this process. */
  private version = 0;
  /** Keys of answers kept only when asked again (`answer`'s `keepWhenAskedAgain`) that were asked once. */
  private readonly askedOnce = new Set<string>();
  /** Which kept answer each anonymous GET was given, by its URL as sent (`replay`). */
  private readonly answeredUrls = new Map<string, AnsweredUrl>();
  private readonly publicCacheControl: string;
  private readonly privateCacheControl: string;

  constructor(
    private readonly hub: ListenHub,
    private readonly settings: Config['catalog'],
    private readonly log: Logger,
  ) {
    const maxAge = settings.httpMaxAgeS > 0 ? `max-age=${settings.httpMaxAgeS}` : 'no-cache';
    this.publicCacheControl = `public, ${maxAge}`;
    this.privateCacheControl = `private, ${maxAge}`;
  }

  /** Subscribes on the LISTEN hub; until it is listening, answers are computed, not cached. */
  start(): Promise<void> {
    if (this.listening || this.stopped || this.settings.cacheBytes === 0) return Promise.resolve();
    this.subscribing ??= this.hub
      .subscribe('catalog_changed', null, {
        notify: (payload) => this.heard(payload),
        resync: () => this.forget(),
      })
      .then(
        (unsubscribe) => {
          if (this.stopped) return unsubscribe();
          this.unsubscribe = unsubscribe;
          this.forget();
          this.listening = true;
        },
        (error) => this.log.warn({ err: error }, 'catalog cache not listening; answers are computed uncached'),
      )
      .finally(() => {
        this.subscribing = null;
      });
    return this.subscribing;
  }

  stop(): void {
    this.stopped = true;
    this.listening = false;
    this.unsubscribe?.();
    this.forget();
  }

  /** The latest catalog version this process heard announced (0 before any). */
  heardVersion(): number {
    return this.version;
  }

  /**
   * Resolves once every catalog change committed before the call has reached this process: it
   * announces a probe of its own, and notifications arrive in commit order. Tests read after writing
   * with it; a production reader never needs it (a change arrives within milliseconds).
   */
  async settled(notify: (payload: { probe: string }) => Promise<void>, timeoutMs = 5000): Promise<void> {
    if (!this.isLive()) return;
    const probe = randomUUID();
    const arrived = new Promise<void>((resolve) => this.probes.set(probe, resolve));
    const timer = setTimeout(() => this.probes.get(probe)?.(), timeoutMs);
    try {
      await notify({ probe });
      await arrived;
    } finally {
      clearTimeout(timer);
      this.probes.delete(probe);
    }
  }

  /**
   * The value of `key`, from memory while the catalog is unchanged and `until` has not passed,
   * otherwise from `compute` (once for all concurrent callers of the same key). `bytes` sizes it
   * for the memory budget. `within`, the freshness of something made from this value, is limited
   * to this value's.
   */
  remember<T>(key: string, bytes: (value: T) => number, compute: (freshness: Freshness) => Promise<T>, within?: Freshness, options: { untilChanged?: boolean } = {}): Promise<T> {
    return this.kept(this.parts, key, bytes, compute, { within, keep: keepAlways, untilChanged: options.untilChanged });
  }

  peek<T>(key: string, within?: Freshness): T | undefined {
    if (!this.isLive()) return undefined;
    const hit = this.parts.fresh(key, Date.now());
    if (!hit) return undefined;
    within?.limitTo(hit.until);
    return hit.value as T;
  }

  /** `remember` in `segment`, keeping a computed value only when `keep` says so for its key. */
  private async kept<T>(
    segment: Segment,
    key: string,
    bytes: (value: T) => number,
    compute: (freshness: Freshness) => Promise<T>,
    { within, keep, untilChanged = false }: { within?: Freshness; keep: (key: string) => boolean; untilChanged?: boolean },
  ): Promise<T> {
    if (!this.isLive()) {
      // Kick a new subscription after a failed one; this request is answered uncached.
      void this.start();
      return compute(freshnessUntil(Number.POSITIVE_INFINITY));
    }
    const now = Date.now();
    const hit = segment.fresh(key, now);
    if (hit) {
      within?.limitTo(hit.until);
      return hit.value as T;
    }
    const epoch = this.epoch;
    const flightKey = `${epoch}\u0000${key}`;
    let flight = this.computing.get(flightKey);
    if (!flight) {
      const freshness = freshnessUntil(untilChanged ? Number.POSITIVE_INFINITY : now + this.settings.cacheTtlMs);
      flight = compute(freshness).then((value) => ({ value, until: freshness.until }));
      this.computing.set(flightKey, flight);
      flight.then(
        ({ value, until }) => {
          if (this.computing.get(flightKey) === flight) this.computing.delete(flightKey);
          // A change announced meanwhile may be missing from the value: hand it out, never keep it.
          if (epoch === this.epoch && this.isLive() && until > Date.now() && keep(key)) this.store(segment, key, value, bytes(value as T), until);
        },
        () => {
          if (this.computing.get(flightKey) === flight) this.computing.delete(flightKey);
        },
      );
    }
    const { value, until } = await flight;
    within?.limitTo(until);
    return value as T;
  }

  /**
   * A whole answer, serialized once: the JSON bytes with their ETag, or null (a `404` to throw).
   * `keepWhenAskedAgain`: for answers that are often asked once only (a search's): the first
   * computation is handed out without being kept, so a stream of one-off answers never pushes out
   * what every request reads (the lists, the index, the effects' views); a key asked again while it
   * is remembered as asked once is kept. `body`: the value's JSON bytes, when they can be made
   * cheaper than by `JSON.stringify` (a page of effects from each effect's kept bytes).
   */
  answer<T>(
    key: string,
    compute: (freshness: Freshness) => Promise<T | null>,
    options: { keepWhenAskedAgain?: boolean; body?: (value: T) => Buffer } = {},
  ): Promise<CatalogAnswer<T> | null> {
    const answerKey = `answer\u0000${key}`;
    return this.kept<CatalogAnswer<T> | null>(
      this.answers,
      answerKey,
      // The value, its bytes and their gzip are kept: count the bytes twice and a little more.
      (answer) => (answer ? answer.body.length * 3 : 64),
      async (freshness) => {
        const value = await compute(freshness);
        if (value === null) return null;
        const body = options.body ? options.body(value) : Buffer.from(JSON.stringify(value));
        return { value, body, etag: `"${hash('sha256', body, 'base64url').slice(0, 32)}"`, key: answerKey };
      },
      { keep: options.keepWhenAskedAgain ? (answerKey) => this.askedAgain(answerKey) : keepAlways },
    );
  }

  /**
   * Remembers that an anonymous GET of `url` (path and query as sent), on the route `route`, was
   * answered with `answer`: while that answer stays kept, `replay` gives it again for the same URL.
   * An answer not kept (a search asked once) is not remembered either.
   */
  answeredWith(url: string, route: string, answer: CatalogAnswer<unknown>): void {
    if (!this.isLive() || !this.answers.holds(answer.key) || this.answeredUrls.get(url)?.answerKey === answer.key) return;
    if (this.answeredUrls.size >= maxAnsweredUrls) this.answeredUrls.clear();
    this.answeredUrls.set(url, { answerKey: answer.key, route });
  }

  /**
   * The answer an anonymous GET of `url` was last given (`answeredWith`), while it is still kept:
   * the same URL validates to the same query, hence the same key, and a kept answer is what its
   * route would send again. Undefined otherwise (the route computes it).
   */
  replay(url: string | undefined): { answer: CatalogAnswer<unknown>; route: string } | undefined {
    if (url === undefined || !this.isLive()) return undefined;
    const answered = this.answeredUrls.get(url);
    if (!answered) return undefined;
    const hit = this.answers.fresh(answered.answerKey, Date.now());
    return hit ? { answer: hit.value as CatalogAnswer<unknown>, route: answered.route } : undefined;
  }

  /**
   * The answer's body gzipped, for a client that accepts gzip; null when it is small, not kept (a
   * search asked once) or asked so for the first time. Compressing costs about five sends of its bytes: an answer is
   * compressed once per catalog version, and only one asked again (the lists are asked thousands of
   * times, most searches a few times at most).
   */
  gzipped(answer: CatalogAnswer<unknown>): Buffer | null {
    if (answer.gzipped) return answer.gzipped;
    if (answer.body.length < minGzipBytes || !this.answers.holds(answer.key)) return null;
    if (!answer.askedForGzip) {
      answer.askedForGzip = true;
      return null;
    }
    answer.gzipped = gzipSync(answer.body);
    return answer.gzipped;
  }

  /**
   * How `answer` goes out: its strong `ETag`, or `304` without a body when the client already has
   * it (`If-None-Match`, either coding's ETag). A kept answer of 1 KB or more asked again goes
   * gzipped to a client that accepts gzip, as phones' HTTP stacks all do (`gzipped`), under its own
   * strong ETag (RFC 9110: another content coding is another representation). `Cache-Control` lets
   * a CDN keep an anonymous answer (`public`); an answer to a request with a token is `private`, so
   * a shared cache never hands a signed-in caller's answer to someone else (and never swallows a
   * request whose token counts something).
   */
  responseTo(answer: CatalogAnswer<unknown>, request: { anonymous: boolean; acceptEncoding: string; ifNoneMatch: string }): CatalogResponse {
    const gzip = acceptsGzip(request.acceptEncoding) ? this.gzipped(answer) : null;
    const gzipEtag = gzipEtagOf(answer.etag);
    const headers: Record<string, string> = {
      'Cache-Control': request.anonymous ? this.publicCacheControl : this.privateCacheControl,
      Vary: 'Accept-Encoding',
      ETag: gzip ? gzipEtag : answer.etag,
    };
    // A client holding either coding of this answer has it.
    if (matchesEtag(request.ifNoneMatch, answer.etag) || matchesEtag(request.ifNoneMatch, gzipEtag)) return { status: 304, headers, body: null };
    headers['Content-Type'] = 'application/json; charset=utf-8';
    if (gzip) headers['Content-Encoding'] = 'gzip';
    return { status: 200, headers, body: gzip ?? answer.body };
  }

  /** Whether `key` was asked once before (then it is kept); otherwise remembers that it was, up to `maxAskedOnce` keys. */
  private askedAgain(key: string): boolean {
    if (this.askedOnce.delete(key)) return true;
    if (this.askedOnce.size >= maxAskedOnce) this.askedOnce.clear();
    this.askedOnce.add(key);
    return false;
  }

  private isLive(): boolean {
    return this.listening && this.hub.backendPid() !== null;
  }

  private heard(payload: Record<string, unknown>): void {
    if (typeof payload.probe === 'string') {
      this.probes.get(payload.probe)?.();
      return;
    }
    if (typeof payload.version === 'number' && payload.version > this.version) this.version = payload.version;
    this.forget();
  }

  /** Empties the cache: what is being computed finishes for its callers but is not kept. */
  private forget(): void {
    this.epoch += 1;
    this.parts.clear();
    this.answers.clear();
    this.askedOnce.clear();
    this.answeredUrls.clear();
    this.computing = new Map();
  }

  /**
   * Keeps a value in `segment`. Over the budget, the answers read longest ago go first, then the
   * parts read longest ago; an answer never pushes out a part (it would go itself first).
   */
  private store(segment: Segment, key: string, value: unknown, bytes: number, until: number): void {
    if (bytes > this.settings.cacheBytes) return;
    segment.set(key, { value, bytes, until });
    while (this.parts.bytes + this.answers.bytes > this.settings.cacheBytes) {
      if (this.answers.dropOldest()) continue;
      if (segment === this.answers) break;
      this.parts.dropOldest();
    }
  }
}

/**
 * Entries in least-recently-used order (a Map keeps insertion order; a hit moves its key to the end),
 * but only a hit on an entry in the older half moves: a hot entry is not deleted and set again on
 * every request (a search reads some thirty entries), and what is evicted first is still something
 * nobody asked for in the last half of the segment's turnover.
 */
class Segment {
  private readonly entries = new Map<string, Entry>();
  /** Counts the moves to the recent end of `entries` (insertions included). */
  private moves = 0;
  bytes = 0;

  /** The entry of `key` while it is still true at `now` (one that is no longer is dropped), moved as the LRU order says. */
  fresh(key: string, now: number): Entry | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.until <= now) {
      this.drop(key);
      return undefined;
    }
    if (this.moves - hit.moved > this.entries.size / 2) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      hit.moved = ++this.moves;
    }
    return hit;
  }

  /** Whether `key` is kept, without reading it. */
  holds(key: string): boolean {
    return this.entries.has(key);
  }

  set(key: string, entry: Omit<Entry, 'moved'>): void {
    this.drop(key);
    this.entries.set(key, { ...entry, moved: ++this.moves });
    this.bytes += entry.bytes;
  }

  /** Drops the entry read longest ago; false when there is none. */
  dropOldest(): boolean {
    for (const key of this.entries.keys()) {
      this.drop(key);
      return true;
    }
    return false;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

const keepAlways = () => true;
/** Keys remembered as asked once, at most; then forgotten all at once. */
const maxAskedOnce = 10_000;
/** URLs remembered with their answers (`answeredWith`), at most; then forgotten all at once. */
const maxAnsweredUrls = 10_000;

function freshnessUntil(until: number): Freshness {
  return {
    until,
    limitTo(epochMs) {
      if (epochMs < this.until) this.until = epochMs;
    },
  };
}

declare module '../http/context' {
  interface ApiContextExtras {
    /** The catalog cache of this process; `createApp` makes one per app. */
    catalogCache: CatalogCache;
  }
}

/** The answer to a client that already has the current catalog answer (`sendCatalogAnswer`), for the route tables. */
export const notModified = { 304: { description: 'Not modified: the `If-None-Match` ETag is the current one; no body' } } as const;

/**
 * Sends a cached catalog answer (`CatalogCache.responseTo`). The answer to an anonymous GET is the
 * same for every such request of its URL: the cache remembers it for `catalogReplay`.
 */
export function sendCatalogAnswer(ctx: ApiContext, answer: CatalogAnswer<unknown>): void {
  const anonymous = !ctx.get('Authorization');
  if (anonymous && ctx.method === 'GET' && ctx.state.route) ctx.catalogCache.answeredWith(ctx.url, ctx.state.route, answer);
  const { status, headers, body } = ctx.catalogCache.responseTo(answer, { anonymous, acceptEncoding: ctx.get('Accept-Encoding'), ifNoneMatch: ctx.get('If-None-Match') });
  ctx.set(headers);
  ctx.status = status;
  if (body) ctx.body = body;
}

/**
 * Answers an anonymous GET whose URL was answered before from a kept catalog answer
 * (`CatalogCache.replay`), ahead of the Koa chain: such a request has no token to check, no limit
 * applies to the public catalog reads, and its URL was validated when it was first answered. What
 * is left of a request is its id, its log line and metric (`observe`, as the chain's own
 * `requestLog`) and the answer's bytes. Answers whether it answered; otherwise the chain does.
 */
export function catalogReplay(
  cache: CatalogCache,
  observe: (answered: AnsweredRequest) => void,
): (request: IncomingMessage, response: ServerResponse) => boolean {
  return (request, response) => {
    if (request.method !== 'GET' || request.headers.authorization) return false;
    const replayed = cache.replay(request.url);
    if (!replayed) return false;
    const started = process.hrtime.bigint();
    const incomingId = request.headers['x-request-id'];
    const requestId = requestIdFrom(typeof incomingId === 'string' ? incomingId : undefined);
    const { status, headers, body } = cache.responseTo(replayed.answer, {
      anonymous: true,
      acceptEncoding: request.headers['accept-encoding'] ?? '',
      ifNoneMatch: request.headers['if-none-match'] ?? '',
    });
    headers['X-Request-Id'] = requestId;
    if (body) headers['Content-Length'] = String(body.length);
    response.writeHead(status, headers);
    if (body) response.end(body);
    else response.end();
    observe({ requestId, method: 'GET', route: replayed.route, status, durationMs: Number(process.hrtime.bigint() - started) / 1e6 });
    return true;
  };
}

/** The last `Accept-Encoding` read and its verdict: a client sends the same one with every request. */
const lastAcceptEncoding = { header: '', gzip: false };

/**
 * Whether `Accept-Encoding` (RFC 9110 12.5.3) takes gzip: named, or `*`, with a weight above 0 (a
 * gzip named with weight 0 refuses it even under `*`). Koa's negotiator ranks every coding of every
 * request, a few percent of a replayed answer's time, for a yes or no.
 */
function acceptsGzip(header: string): boolean {
  if (header === lastAcceptEncoding.header) return lastAcceptEncoding.gzip;
  const gzip = gzipAccepted(header);
  lastAcceptEncoding.header = header;
  lastAcceptEncoding.gzip = gzip;
  return gzip;
}

function gzipAccepted(header: string): boolean {
  if (!header) return false;
  let star = false;
  for (const element of header.split(',')) {
    const [coding, ...parameters] = element.split(';');
    const name = coding.trim().toLowerCase();
    if (name !== 'gzip' && name !== 'x-gzip' && name !== '*') continue;
    const weight = parameters.map((parameter) => /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(parameter)).find(Boolean);
    const accepted = !weight || Number(weight[1]) > 0;
    if (name === '*') star = accepted;
    else return accepted;
  }
  return star;
}

/** The strong ETag of an answer's gzip coding: the identity one's, marked. */
function gzipEtagOf(etag: string): string {
  return `${etag.slice(0, -1)}-gzip"`;
}

/** RFC 9110 13.1.2: `*`, or any listed tag equal to ours under the weak comparison. */
function matchesEtag(header: string, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
