import type { AddressInfo, Server } from 'node:net';

/** Listens on `host` (HOST: loopback, one address, or every interface); resolves with the port (the one picked when `port` is 0). */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}
