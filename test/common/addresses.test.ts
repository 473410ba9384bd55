import { expect } from 'chai';
import type { NetworkInterfaceInfo } from 'node:os';
import { renderUnicodeCompact } from 'uqr';
import { lanAddress, listenerUrl, startAddressLines } from '../../common/addresses';

function address(address: string, fields: Partial<NetworkInterfaceInfo> = {}): NetworkInterfaceInfo {
  return { address, family: 'IPv4', internal: false, netmask: '255.255.255.0', mac: '00:00:00:00:00:00', cidr: `${address}/24`, ...fields } as NetworkInterfaceInfo;
}

describe('addresses', () => {
  it("detects this machine's LAN address: a private IPv4 of a real interface, not loopback, a bridge, a tunnel or link-local", () => {
    expect(lanAddress({
      lo: [address('127.0.0.1', { internal: true })],
      docker0: [address('172.17.0.1')],
      utun3: [address('10.8.0.2')],
      wlan0: [address('fe80::1', { family: 'IPv6' }), address('169.254.10.1'), address('192.168.1.23')],
    })).to.equal('192.168.1.23');
    expect(lanAddress({ eth0: [address('203.0.113.9')], en1: [address('10.0.0.5')] })).to.equal('10.0.0.5');
    expect(lanAddress({ eth0: [address('203.0.113.9')] })).to.equal('203.0.113.9');
    expect(lanAddress({ lo: [address('127.0.0.1', { internal: true })], docker0: [address('172.17.0.1')] })).to.equal(null);
  });

  it('reaches a listener on a wildcard through loopback, on an address through that address', () => {
    expect(listenerUrl('0.0.0.0', 8080)).to.equal('http://127.0.0.1:8080');
    expect(listenerUrl('::', 8080)).to.equal('http://[::1]:8080');
    expect(listenerUrl('127.0.0.2', 9000)).to.equal('http://127.0.0.2:9000');
  });

  describe('the start lines', () => {
    it('in LAN mode: the phone address, its QR code, and the emulators', () => {
      const lines = startAddressLines({ publicBaseUrl: 'http://192.168.1.23:8080', host: '0.0.0.0', port: 8080 }, { lan: true });
      expect(lines[0]).to.equal('Phone on the same network: http://192.168.1.23:8080');
      expect(lines[1]).to.equal(renderUnicodeCompact('http://192.168.1.23:8080').trimEnd());
      expect(lines[1].split('\n').length).to.be.above(10);
      expect(lines[2]).to.equal('Android emulator: http://10.0.2.2:8080   iOS simulator: http://localhost:8080');
      expect(lines[3]).to.contain('http://192.168.1.23:8080');
      expect(lines).to.have.length(4);
    });

    it('in LAN mode for a log collector: the same lines without the QR code', () => {
      const withCode = startAddressLines({ publicBaseUrl: 'http://192.168.1.23:8080', host: '0.0.0.0', port: 8080 }, { lan: true });
      expect(startAddressLines({ publicBaseUrl: 'http://192.168.1.23:8080', host: '0.0.0.0', port: 8080 }, { lan: true, qrCode: false }))
        .to.deep.equal([withCode[0], withCode[2], withCode[3]]);
    });

    it('on loopback: the iOS simulator reaches it, and how a phone or the Android emulator would; elsewhere nothing more', () => {
      expect(startAddressLines({ publicBaseUrl: 'http://127.0.0.1:8080', host: '127.0.0.1', port: 8080 }, { lan: false }))
        .to.deep.equal(['iOS simulator: http://127.0.0.1:8080   a phone on the same network or the Android emulator: npm start -- --lan']);
      expect(startAddressLines({ publicBaseUrl: 'https://api.example.com', host: '0.0.0.0', port: 8080 }, { lan: false })).to.deep.equal([]);
    });
  });
});
