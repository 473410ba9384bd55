import type { ServerResponse } from 'node:http';

/**
 * The wire side of one `text/event-stream` response: frames, heartbeat comments and the end.
 * Frames are tiny, so a client that stops reading only ever has a few kilobytes queued; past
 * `maxBufferedBytes` it is treated as gone rather than buffered without bound.
 */
const maxBufferedBytes = 256 * 1024;

export const sseHeaders: Record<string, string> = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  // no-transform: a compressing proxy would hold events back until its buffer fills.
  'Cache-Control': 'no-cache, no-transform',
  // Tells nginx-style proxies not to buffer the response.
  'X-Accel-Buffering': 'no',
};

/** HTTP/1.1 only: HTTP/2 has no connection headers (Node drops one with a warning). */
const http1Headers: Record<string, string> = { Connection: 'keep-alive' };

/** One event: an optional `event:` line and one `data:` line of serialized JSON (which has no newline). */
export function formatEvent(event: string | null, json: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${json}\n\n`;
}

export const heartbeatFrame = ': ping\n\n';

export class SseWriter {
  private opened = false;
  /** An HTTP/2 stream shares its connection with others (`H2C_PORT`): the connection is never this stream's to close. */
  private readonly multiplexed: boolean;

  constructor(private readonly response: ServerResponse) {
    this.multiplexed = response.req.httpVersionMajor >= 2;
  }

  /**
   * Writes the status line and headers at once, so the client sees the stream open before any
   * event. The request timeout is turned off for this response only (on HTTP/2 the socket's
   * `setTimeout` would be the whole connection's idle timeout).
   */
  open(headers: Record<string, string>): void {
    this.response.setTimeout(0);
    this.response.socket?.setNoDelay(true);
    this.response.writeHead(200, this.multiplexed ? headers : { ...headers, ...http1Headers });
    this.opened = true;
  }

  /** False when the client is gone or stopped reading; the caller then ends the stream. */
  write(frame: string): boolean {
    if (this.response.writableEnded || this.response.destroyed) return false;
    this.response.write(frame);
    return this.response.writableLength <= maxBufferedBytes;
  }

  /**
   * Ends the response once it is open (before that, the error answer is Koa's to write);
   * `closeConnection` also closes an HTTP/1.1 socket (at shutdown, so the server can stop; an
   * HTTP/2 connection is closed by its server's drain once its streams have ended).
   */
  end(closeConnection = false): void {
    if (!this.opened) return;
    if (!this.response.writableEnded && !this.response.destroyed) this.response.end();
    if (closeConnection && !this.multiplexed) this.response.socket?.end();
  }
}
