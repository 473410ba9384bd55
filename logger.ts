import pino from 'pino';

/** Fields that must never reach a log line, wherever they appear one level deep. */
const redactedPaths = [
  'headers.authorization',
  'headers.cookie',
  ...['password', 'current_password', 'new_password', 'token', 'access_token', 'refresh_token', 'id_token',
    'authorization_code', 'code', 'secret', 'client_secret'].flatMap((field) => [field, `*.${field}`]),
];

export function createLogger(level: string, destination?: pino.DestinationStream): pino.Logger {
  return pino({ level, redact: { paths: redactedPaths, censor: '[redacted]' }, base: { pid: process.pid } }, destination);
}

export type Logger = pino.Logger;
