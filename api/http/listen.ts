import type { AddressInfo, Server } from 'node:net';

/** Listens on every interface; resolves with the port (the one picked when `port` is 0). */
export function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve((server.address() as AddressInfo).port));
  });
}
