import { expect } from 'chai';
import { ConfigError, loadConfig } from '../config';

describe('configuration', () => {
  const base = { TOKEN_SECRET: 'x'.repeat(40), DATA_DIR: '/tmp/config-test' };

  it('applies the documented defaults', () => {
    const config = loadConfig(base);
    expect(config.port).to.equal(8080);
    expect(config.publicBaseUrl).to.equal('http://127.0.0.1:8080');
    expect(config.linkBase).to.equal(config.publicBaseUrl);
    expect(config.accessTokenTtlS).to.equal(900);
    expect(config.refreshTokenTtlS).to.equal(2_592_000);
    expect([config.guestStartCredits, config.welcomeCredits, config.referralBonus]).to.deep.equal([100, 50, 50]);
    expect(config.databaseUrl).to.equal(null);
    expect(config.s3).to.equal(null);
    expect(config.simProviderLatencyMs).to.equal(1500);
  });

  it('names the bad variable', () => {
    expect(() => loadConfig({ ...base, PORT: 'eighty' })).to.throw(ConfigError, 'PORT');
    expect(() => loadConfig({ ...base, ACCESS_TOKEN_TTL_S: '0' })).to.throw(ConfigError, 'ACCESS_TOKEN_TTL_S');
    expect(() => loadConfig({ ...base, DATABASE_URL: 'not a url' })).to.throw(ConfigError, 'DATABASE_URL');
    expect(() => loadConfig({ ...base, TRUST_PROXY: 'maybe' })).to.throw(ConfigError, 'TRUST_PROXY');
    expect(() => loadConfig({ ...base, TOKEN_SECRET: 'short' })).to.throw(ConfigError, 'TOKEN_SECRET');
  });

  it('reads lists of audiences and storage settings', () => {
    const config = loadConfig({ ...base, IDP_A_AUDIENCE: 'app.one, app.two', S3_ENDPOINT: 'http://minio:9000', S3_BUCKET: 'b' });
    expect(config.idp.a.audiences).to.deep.equal(['app.one', 'app.two']);
    expect(config.s3).to.include({ endpoint: 'http://minio:9000', bucket: 'b' });
  });
});
