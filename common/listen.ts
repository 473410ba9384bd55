import type { AddressInfo, Server } from 'node:net';
import { ConfigError } from '../config';

/**
 * Listens on `host` (HOST: loopback, one address, or every interface); resolves with the port (the
 * one picked when `port` is 0). `setting` names the variable that chose the port: a port another
 * program holds stops the start with one line saying what to change, not a stack trace.
 */
export function listen(server: Server, port: number, host: string, setting: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(listenFailure(error, port, host, setting)));
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

/** Why a listener could not start, as a ConfigError naming the setting to change; any other error as it is. */
export function listenFailure(error: NodeJS.ErrnoException, port: number, host: string, setting: string): Error {
  switch (error.code) {
    case 'EADDRINUSE':
      return new ConfigError(`port ${port} (${setting}) on ${host} is taken by another program; set ${setting} to a free port`);
    case 'EACCES':
      return new ConfigError(`port ${port} (${setting}) needs privileges this process does not have; set ${setting} to 1024 or above`);
    case 'EADDRNOTAVAIL':
      return new ConfigError(`${host} (HOST) is not an address of this machine; set HOST to one of its addresses, or to 0.0.0.0`);
    default:
      return error;
  }
}
