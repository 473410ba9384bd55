import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * Every connection keeps the statements it runs often prepared, as asyncpg and pgjdbc do: a
 * parameterised statement run a second time on a connection is sent as a named statement (a hash of
 * its text), so Postgres parses it once and may keep a generic plan. Guards: a text is prepared on
 * its second run (texts that vary never are), at most `MAX_PREPARED_PER_CONNECTION` stay (least
 * recently used dropped); a text returning `*` never is, since a migration adding a column would
 * fail it with "cached plan must not change result type", and a text that fails so anyway is not
 * prepared again on that connection. A pooler in front of Postgres must keep prepared statements
 * per client (PgBouncer 1.21+ `max_prepared_statements`, or session pooling).
 */
const MAX_PREPARED_PER_CONNECTION = 250;
/** Texts seen once are remembered (the texts themselves) up to this many, then forgotten all at once. */
const MAX_SEEN_ONCE = 500;

const preparable = /^\s*(select|insert|update|delete|with)\b/i;
/** `select *`, `select t.*`, `returning *`, `, *`: a result shape that follows the table's. */
const returnsStar = /(\bselect\s+(distinct\s+)?|\breturning\s+|,\s*)\*|\.\*/i;
/** A `select *` over `json_to_recordset(...) as x (columns)` (pg-boss's inserts and completions): its columns are the ones declared. */
const recordsetStar = /\bselect\s+\*(?:(?!\bfrom\b)[\s\S])*?\bfrom\s+jsonb?_to_recordset\(/gi;

type Callback = (error: Error | null, result?: unknown) => void;
type RawQuery = (...args: unknown[]) => unknown;

function statementName(text: string): string {
  return `s${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
}

function cachedPlanBroke(error: unknown): boolean {
  return (error as { code?: string }).code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message));
}

/**
 * One connection's prepared statements, keyed by text, most recently used last. A text already
 * prepared is found by one lookup: no hashing and no pattern test on the hot path.
 */
class StatementCache {
  /** Text → statement name. */
  private readonly prepared = new Map<string, string>();
  private readonly seenOnce = new Set<string>();
  private readonly unpreparable = new Set<string>();

  /** `parsed`: the names node-pg has parsed on this connection (only those exist on the server). */
  constructor(private readonly query: RawQuery, private readonly parsed: Record<string, string>) {}

  /** The name the statement of `text` runs under now, or null to run it unnamed. */
  nameOf(text: string): string | null {
    const name = this.prepared.get(text);
    if (name !== undefined) {
      this.prepared.delete(text);
      this.prepared.set(text, name);
      return name;
    }
    if (this.unpreparable.has(text) || !isPreparable(text)) return null;
    if (!this.seenOnce.has(text)) {
      if (this.seenOnce.size >= MAX_SEEN_ONCE) this.seenOnce.clear();
      this.seenOnce.add(text);
      return null;
    }
    this.seenOnce.delete(text);
    if (this.prepared.size >= MAX_PREPARED_PER_CONNECTION) this.evictLeastRecent();
    const named = statementName(text);
    this.prepared.set(text, named);
    return named;
  }

  /** After a result type changed under the statement of `text`: never named again here. */
  forget(text: string): void {
    this.prepared.delete(text);
    this.unpreparable.add(text);
  }

  private evictLeastRecent(): void {
    const [[oldestText, oldest]] = this.prepared;
    this.prepared.delete(oldestText);
    // A text whose parse failed was never prepared: deallocating it would fail (and abort a transaction).
    if (this.parsed[oldest] === undefined) return;
    // Queued before the statement that needs the room; in an aborted transaction it fails and the
    // statement simply stays prepared (node-pg still knows it, so a later run reuses it).
    this.query(`deallocate ${oldest}`, (error: Error | null) => {
      if (!error) delete this.parsed[oldest];
    });
  }
}

/** Makes `client` prepare its statements (above); safe to call on a client that runs anything. */
export function preparesStatements(client: pg.Client): void {
  const query = client.query.bind(client) as RawQuery;
  const { parsedStatements } = (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection;
  const cache = new StatementCache(query, parsedStatements);
  (client as { query: RawQuery }).query = (...args: unknown[]) => {
    const config = parameterisedConfig(args);
    const name = config && cache.nameOf(config.text);
    if (!config || !name) return query(...args);
    const named = { ...config, name };
    const callback = args.find((arg): arg is Callback => typeof arg === 'function');
    const forgetIfBroken = (error: unknown) => {
      if (cachedPlanBroke(error)) cache.forget(config.text);
    };
    if (callback) {
      return query(named, (error: Error | null, result?: unknown) => {
        if (error) forgetIfBroken(error);
        callback(error, result);
      });
    }
    return (query(named) as Promise<unknown>).catch((error: unknown) => {
      forgetIfBroken(error);
      throw error;
    });
  };
}

/** DML that does not return `*` (above). */
function isPreparable(text: string): boolean {
  return preparable.test(text) && !returnsStar.test(text.replace(recordsetStar, ''));
}

/** The query's config when it carries parameters (a statement without any is never prepared). */
function parameterisedConfig(args: unknown[]): pg.QueryConfig | null {
  const [first, second] = args;
  let config: pg.QueryConfig;
  if (typeof first === 'string') {
    if (!Array.isArray(second)) return null;
    config = { text: first, values: second };
  } else if (isPlainQueryConfig(first)) {
    config = first;
  } else {
    return null;
  }
  return config.values?.length ? config : null;
}

/** A config object, not a submittable (a cursor, a stream) nor a statement already named. */
function isPlainQueryConfig(value: unknown): value is pg.QueryConfig {
  if (!value || typeof value !== 'object') return false;
  const candidate = value as pg.QueryConfig & { submit?: unknown };
  return typeof candidate.text === 'string' && !candidate.name && typeof candidate.submit !== 'function';
}

/** A `pg.Client` that prepares its statements: for pools made elsewhere (pg-boss's) that take a `Client` class. */
export class PreparingClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    preparesStatements(this);
  }
}
