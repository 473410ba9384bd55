import { expect } from 'chai';
import { renderUnicodeCompact } from 'uqr';
import { startSummaryLines, type StartFacts } from '../../process/start-summary';

const embeddedDefault: StartFacts = {
  publicBaseUrl: 'http://127.0.0.1:8080',
  host: '127.0.0.1',
  port: 8080,
  ops: { user: 'operator', password: 'generated-password-0123456789', passwordGenerated: true },
  dataDir: '/home/dev/effects/.data',
  embeddedPostgresPort: 54329,
  embeddedStore: true,
  simulators: ['the AI provider simulator (PROVIDER_URL is not set)', 'the payment processor simulator (PAYMENT_PROCESSOR_URL is not set)'],
};

describe('the start summary', () => {
  it('npm start: the API, its reference, the console with its generated password, the simulator address, the data, the simulators, in that order', () => {
    expect(startSummaryLines(embeddedDefault, { lan: false, qrCode: true })).to.deep.equal([
      'API: http://127.0.0.1:8080 (every path starts with /v1)',
      'API reference: http://127.0.0.1:8080/docs (OpenAPI: http://127.0.0.1:8080/v1/openapi.json)',
      'Operator console: http://127.0.0.1:8080/ops, user operator, password generated-password-0123456789 (generated once, kept in /home/dev/effects/.data/secrets.json)',
      'iOS simulator: http://127.0.0.1:8080   a phone on the same network or the Android emulator: npm start -- --lan',
      'Data: /home/dev/effects/.data (DATA_DIR): Postgres on port 54329, media in /home/dev/effects/.data/s3',
      'Simulators: the AI provider simulator (PROVIDER_URL is not set), the payment processor simulator (PAYMENT_PROCESSOR_URL is not set)',
    ]);
  });

  it('npm start -- --lan: the phone address with its QR code on a terminal, without it for a log collector, and the emulators', () => {
    const lan = { ...embeddedDefault, publicBaseUrl: 'http://192.168.1.23:8080', host: '0.0.0.0' };
    const terminal = startSummaryLines(lan, { lan: true, qrCode: true });
    expect(terminal[0]).to.equal('API: http://192.168.1.23:8080 (every path starts with /v1)');
    expect(terminal.slice(3, 7)).to.deep.equal([
      'Phone on the same network: http://192.168.1.23:8080',
      renderUnicodeCompact('http://192.168.1.23:8080').trimEnd(),
      'Android emulator: http://10.0.2.2:8080   iOS simulator: http://localhost:8080',
      'Links in answers point at http://192.168.1.23:8080; both emulators reach it too.',
    ]);
    expect(terminal[7]).to.match(/^Data: /);
    const collector = startSummaryLines(lan, { lan: true, qrCode: false });
    expect(collector).to.deep.equal(terminal.filter((line) => !line.includes('\n')));
    expect(collector).to.have.length(terminal.length - 1);
  });

  it('beside configured services: the console as configured or closed, the data where the variables say, no simulator', () => {
    const configured: StartFacts = {
      ...embeddedDefault,
      publicBaseUrl: 'https://api.example.com',
      host: '0.0.0.0',
      ops: { user: 'ops', password: 'configured-password', passwordGenerated: false },
      embeddedPostgresPort: null,
      embeddedStore: false,
      simulators: [],
    };
    expect(startSummaryLines(configured, { lan: false, qrCode: false })).to.deep.equal([
      'API: https://api.example.com (every path starts with /v1)',
      'API reference: https://api.example.com/docs (OpenAPI: https://api.example.com/v1/openapi.json)',
      'Operator console: https://api.example.com/ops, user ops, password from OPS_PASSWORD',
      'Data: Postgres of DATABASE_URL, media in the bucket of S3_ENDPOINT',
      'Simulators: none',
    ]);
    const closed = startSummaryLines({ ...configured, ops: { user: 'operator', password: null, passwordGenerated: false } }, { lan: false, qrCode: false });
    expect(closed[2]).to.equal('Operator console: https://api.example.com/ops, closed (OPS_PASSWORD is not set)');
    expect(closed.join('\n')).not.to.contain('password from');
  });

  it('an embedded database beside a configured store, and the other way round', () => {
    const lines = (facts: Partial<StartFacts>) => startSummaryLines({ ...embeddedDefault, ...facts }, { lan: false, qrCode: false });
    expect(lines({ embeddedStore: false })).to.include('Data: /home/dev/effects/.data (DATA_DIR): Postgres on port 54329, media in the bucket of S3_ENDPOINT');
    expect(lines({ embeddedPostgresPort: null })).to.include('Data: /home/dev/effects/.data (DATA_DIR): Postgres of DATABASE_URL, media in /home/dev/effects/.data/s3');
  });
});
