import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../common/logger';
import { errors, type ApiError } from './errors';

/** Node's parser errors, as the answer they deserve; anything else it cannot parse is a 400. */
const answers: Record<string, () => ApiError> = {
  HPE_HEADER_OVERFLOW: errors.headersTooLarge,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: errors.payloadTooLarge,
  ERR_HTTP_REQUEST_TIMEOUT: errors.requestTimeout,
};

/**
 * A request Node cannot parse (a bad header, headers above 16 KB, `Content-Length: -1`) or that
 * arrives too slowly never reaches Koa: Node would answer a bare 400/431/408. This writes the
 * contract's envelope with an `X-Request-Id` instead, and closes the connection, as Node does.
 */
export function answerClientErrors(server: Server, log: Logger, requestTimeoutMs: number): void {
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = Math.min(server.headersTimeout, requestTimeoutMs);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already under way on this connection cannot be followed by another one.
    const responding = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (error.code === 'ECONNRESET' || !socket.writable || responding) {
      socket.destroy();
      return;
    }
    const answer = (answers[error.code ?? ''] ?? errors.badRequest)();
    const requestId = randomUUID();
    const body = JSON.stringify(answer.body);
    socket.end([
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'));
    log.info({ requestId, status: answer.status, reason: error.code }, 'request refused by the HTTP parser');
  });
}
