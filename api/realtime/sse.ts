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
  Connection: 'keep-alive',
  // Tells nginx-style proxies not to buffer the response.
  'X-Accel-Buffering': 'no',
};

/** One event: an optional `event:` line and one `data:` line of serialized JSON (which has no newline). */
export function formatEvent(event: string | null, json: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${json}\n\n`;
}

export const heartbeatFrame = ': ping\n\n';

export class SseWriter {
  private opened = false;

  constructor(private readonly response: ServerResponse) {}

  /** Writes the status line and headers at once, so the client sees the stream open before any event. */
  open(headers: Record<string, string>): void {
    const socket = this.response.socket;
    socket?.setTimeout(0);
    socket?.setNoDelay(true);
    this.response.writeHead(200, headers);
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
   * `closeConnection` also closes the socket (at shutdown, so the server can stop).
   */
  end(closeConnection = false): void {
    if (!this.opened) return;
    if (!this.response.writableEnded && !this.response.destroyed) this.response.end();
    if (closeConnection) this.response.socket?.end();
  }
}
