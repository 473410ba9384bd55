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

  describe('provider accounts', () => {
    const accounts = (env: Record<string, string>) => loadConfig({ ...base, ...env }).generations.providerAccounts;

    it('runs the two simulator accounts when no account of any kind is configured, and only then', () => {
      expect(accounts({})).to.deep.equal([
        { kind: 'simulator', apiKey: 'sim-account-1', slots: 4 },
        { kind: 'simulator', apiKey: 'sim-account-2', slots: 4 },
      ]);
      expect(accounts({ REPLICATE_ACCOUNTS: 'r8_token:3' })).to.deep.equal([{ kind: 'replicate', apiKey: 'r8_token', slots: 3 }]);
    });

    it('reads every kind, the last colon of an item separating the slots (a fal key is key_id:key_secret)', () => {
      expect(accounts({ PROVIDER_ACCOUNTS: 'sim:2', REPLICATE_ACCOUNTS: 'r8_one:8, r8_two:4', FAL_ACCOUNTS: 'id-1:secret-1:6' })).to.deep.equal([
        { kind: 'simulator', apiKey: 'sim', slots: 2 },
        { kind: 'replicate', apiKey: 'r8_one', slots: 8 },
        { kind: 'replicate', apiKey: 'r8_two', slots: 4 },
        { kind: 'fal', apiKey: 'id-1:secret-1', slots: 6 },
      ]);
    });

    it('refuses a malformed list, naming the variable and never the token', () => {
      const refusals: [Record<string, string>, string][] = [
        [{ REPLICATE_ACCOUNTS: 'r8_zz9-token' }, 'REPLICATE_ACCOUNTS'],
        [{ REPLICATE_ACCOUNTS: 'r8_zz9-token:0' }, 'REPLICATE_ACCOUNTS'],
        [{ FAL_ACCOUNTS: 'zz9-key-without-id:4' }, 'FAL_ACCOUNTS'],
        [{ FAL_ACCOUNTS: 'zz9-id:zz9-key' }, 'FAL_ACCOUNTS'],
        [{ PROVIDER_ACCOUNTS: 'zz9-token:2', REPLICATE_ACCOUNTS: 'zz9-token:2' }, 'list a key twice'],
      ];
      for (const [env, named] of refusals) {
        let message = '';
        try {
          loadConfig({ ...base, ...env });
        } catch (error) {
          expect(error).to.be.instanceOf(ConfigError);
          message = (error as Error).message;
        }
        expect(message, JSON.stringify(env)).to.contain(named);
        expect(message).not.to.contain('zz9');
      }
    });
  });
});
