import { isIP } from 'node:net';
import type { NetworkInterfaceInfo } from 'node:os';
import { renderUnicodeCompact } from 'uqr';

/**
 * Where the service listens and where clients reach it. A listener bound to a wildcard (`0.0.0.0`,
 * `::`) is reached on this machine through loopback; one bound to an address, through that address.
 */

export function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/** `http://<host>:<port>` for a client on this machine; IPv6 in brackets. */
export function listenerUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${isIP(reachable) === 6 ? `[${reachable}]` : reachable}:${port}`;
}

/** Interfaces a phone on the same network never reaches the host through: containers' and VMs' bridges, VPN tunnels. */
const virtualInterface = /^(docker|br-|veth|virbr|vboxnet|vmnet|utun|tun|tap|wg|zt|lxc|lxd|cni|flannel|cali|kube)/;

/**
 * The IPv4 address of this machine on its local network (what `npm start -- --lan` announces): the
 * first private address of a physical-looking interface, else the first non-internal IPv4 address.
 */
export function lanAddress(interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string | null {
  const candidates = Object.entries(interfaces)
    .filter(([name]) => !virtualInterface.test(name))
    .flatMap(([, addresses]) => addresses ?? [])
    .filter((address) => address.family === 'IPv4' && !address.internal && !address.address.startsWith('169.254.'))
    .map((address) => address.address);
  const isPrivate = (address: string) => /^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)/.test(address);
  return candidates.find(isPrivate) ?? candidates[0] ?? null;
}

/**
 * The lines the start prints about where phones and emulators reach the service. In LAN mode: the
 * address a phone on the same network opens, as text and (for a terminal) as a QR code, and the
 * emulators' ways to the same port (the Android emulator reaches the host's loopback at 10.0.2.2, the
 * iOS simulator shares it). On loopback only the iOS simulator reaches it. Elsewhere nothing beyond
 * the address clients are given.
 */
export function startAddressLines(settings: { publicBaseUrl: string; host: string; port: number }, options: { lan: boolean; qrCode?: boolean }): string[] {
  const { publicBaseUrl, host, port } = settings;
  if (!options.lan) {
    const local = host === '127.0.0.1' || host === '::1' || host === 'localhost';
    return local ? [`iOS simulator: ${publicBaseUrl}   a phone on the same network or the Android emulator: npm start -- --lan`] : [];
  }
  return [
    `Phone on the same network: ${publicBaseUrl}`,
    ...(options.qrCode === false ? [] : [renderUnicodeCompact(publicBaseUrl).trimEnd()]),
    `Android emulator: http://10.0.2.2:${port}   iOS simulator: http://localhost:${port}`,
    `Links in answers point at ${publicBaseUrl}; both emulators reach it too.`,
  ];
}
