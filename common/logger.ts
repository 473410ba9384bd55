import pino from 'pino';

/** Fields that must never reach a log line, wherever they appear one level deep. */
const redactedPaths = [
  'headers.authorization',
  'headers.cookie',
  ...['password', 'current_password', 'new_password', 'token', 'access_token', 'refresh_token', 'id_token',
    'authorization_code', 'code', 'secret', 'client_secret'].flatMap((field) => [field, `*.${field}`]),
];

const flushEveryMs = 1000;

/**
 * Logs go to stdout through a buffered asynchronous writer: a synchronous write per request line
 * costs a third of the API's throughput. The buffer is flushed every second (so a quiet process's
 * lines still show promptly) and by `flushLogs` at shutdown, so nothing is lost.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): pino.Logger {
  const options: pino.LoggerOptions = { level, redact: { paths: redactedPaths, censor: '[redacted]' }, base: { pid: process.pid } };
  if (destination) return pino(options, destination);
  const log = pino(options, pino.destination({ dest: 1, sync: false, minLength: 4096 }));
  setInterval(() => log.flush(), flushEveryMs).unref();
  return log;
}

/** How a service process writes its log: pino-pretty's lines for a person, JSON lines for everything else. */
export type LogFormat = 'pretty' | 'json';

/** LOG_FORMAT when set; else pretty on a terminal, JSON on a pipe, a file or a log collector. */
export function logFormatFor(setting: LogFormat | null, stdoutIsTerminal: boolean): LogFormat {
  return setting ?? (stdoutIsTerminal ? 'pretty' : 'json');
}

/**
 * The logger of a service process (main.ts). JSON is `createLogger`'s, buffered. Pretty lines are
 * written at once: a person at a terminal reads them as they come, and such a process logs little.
 * pino-pretty is loaded only here, so a process that logs JSON never loads it.
 */
export async function createProcessLogger(level: string, format: LogFormat): Promise<pino.Logger> {
  if (format === 'json') return createLogger(level);
  const { prettyFactory } = await import('pino-pretty');
  const prettify = prettyFactory({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
  const stdout = pino.destination({ dest: 1, sync: true });
  return createLogger(level, { write: (line: string) => stdout.write(prettify(line)) });
}

/**
 * The logger of an operator script (`scripts/`): on stderr, so that stdout carries the script's
 * result alone and `> file` or a pipe holds nothing else. Written synchronously: a script logs
 * little, and may exit right after a failure.
 */
export function createScriptLogger(level: string): pino.Logger {
  return createLogger(level, pino.destination({ dest: 2, sync: true }));
}

export function flushLogs(log: pino.Logger): Promise<void> {
  return new Promise((resolve) => log.flush(() => resolve()));
}

export type Logger = pino.Logger;
