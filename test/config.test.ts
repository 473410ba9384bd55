import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

  it('reads the marketplace\'s routes as JSON, inline or from a file, the simulator\'s by default', () => {
    expect(loadConfig(base).marketplace).to.deep.include({
      moderationRuns: { simulator: { model: 'moderation' } },
      userEffectRuns: { image: { simulator: { model: 'image' } }, video: { simulator: { model: 'video' } } },
    });
    const moderation = {
      replicate: { model: 'openai/gpt-4.1-mini', input: { prompt: '{{prompt}}', image_input: ['{{photo}}'] } },
      fal: { model: 'openrouter/router/vision', input: { model: 'google/gemini-2.5-flash', prompt: '{{prompt}}', image_urls: ['{{photo}}'] }, output: 'output' },
    };
    const video = { fal: { model: 'fal-ai/kling-video/v2.1/standard/image-to-video', input: { prompt: '{{prompt}}', image_url: '{{person.1.photo}}' }, output: 'video.url' } };
    const folder = mkdtempSync(path.join(os.tmpdir(), 'config-runs-'));
    try {
      writeFileSync(path.join(folder, 'video.json'), JSON.stringify(video));
      const config = loadConfig({ ...base, MODERATION_RUNS: JSON.stringify(moderation), USER_EFFECT_VIDEO_RUNS_FILE: path.join(folder, 'video.json') });
      expect(config.marketplace.moderationRuns).to.deep.equal(moderation);
      expect(config.marketplace.userEffectRuns).to.deep.equal({ image: { simulator: { model: 'image' } }, video });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('refuses to start on a route it could not run, naming the variable and the field', () => {
    expect(() => loadConfig({ ...base, MODERATION_RUNS: '{"fal": ' })).to.throw(ConfigError, 'MODERATION_RUNS must be JSON');
    expect(() => loadConfig({ ...base, MODERATION_RUNS: JSON.stringify({ fal: { model: 'fal-ai/x', input: { prompt: '{{prompt}}' } } }) }))
      .to.throw(ConfigError, 'MODERATION_RUNS: fal.input places no photo');
    expect(() => loadConfig({ ...base, USER_EFFECT_IMAGE_RUNS: JSON.stringify({ replicate: { model: 'nano-banana', input: { image_input: '{{photos}}' } }, openai: {} }) }))
      .to.throw(ConfigError, 'USER_EFFECT_IMAGE_RUNS: openai is not a provider kind (simulator, replicate, fal); replicate.model must be owner/name');
    expect(() => loadConfig({ ...base, USER_EFFECT_IMAGE_RUNS: '{}', USER_EFFECT_IMAGE_RUNS_FILE: '/nowhere.json' })).to.throw(ConfigError, 'not both');
    expect(() => loadConfig({ ...base, USER_EFFECT_VIDEO_RUNS_FILE: '/nowhere/video.json' })).to.throw(ConfigError, 'USER_EFFECT_VIDEO_RUNS_FILE must name a readable file');
  });

  it('LOG_FORMAT: pretty or json, unset to choose by the terminal', () => {
    expect(loadConfig(base).logFormat).to.equal(null);
    expect(loadConfig({ ...base, LOG_FORMAT: 'pretty' }).logFormat).to.equal('pretty');
    expect(loadConfig({ ...base, LOG_FORMAT: 'json' }).logFormat).to.equal('json');
    expect(() => loadConfig({ ...base, LOG_FORMAT: 'text' })).to.throw(ConfigError, 'LOG_FORMAT must be pretty or json');
  });

  it('reads lists of audiences and storage settings', () => {
    const config = loadConfig({ ...base, IDP_A_AUDIENCE: 'app.one, app.two', S3_ENDPOINT: 'http://minio:9000', S3_BUCKET: 'b' });
    expect(config.idp.a.audiences).to.deep.equal(['app.one', 'app.two']);
    expect(config.s3).to.include({ endpoint: 'http://minio:9000', bucket: 'b' });
  });

  describe('HOST: where every server listens', () => {
    it('is loopback in the embedded default and every interface beside a configured database; PUBLIC_BASE_URL follows it', () => {
      expect(loadConfig(base)).to.include({ host: '127.0.0.1', publicBaseUrl: 'http://127.0.0.1:8080' });
      expect(loadConfig({ ...base, DATABASE_URL: 'postgres://db:5432/app' })).to.include({ host: '0.0.0.0', publicBaseUrl: 'http://127.0.0.1:8080' });
      expect(loadConfig({ ...base, HOST: '127.0.0.2', PORT: '9000' })).to.include({ host: '127.0.0.2', publicBaseUrl: 'http://127.0.0.2:9000' });
      expect(loadConfig({ ...base, HOST: '::' })).to.include({ host: '::', publicBaseUrl: 'http://[::1]:8080' });
      expect(loadConfig({ ...base, HOST: '0.0.0.0', PUBLIC_BASE_URL: 'https://api.example.com' })).to.include({ host: '0.0.0.0', publicBaseUrl: 'https://api.example.com' });
      expect(() => loadConfig({ ...base, HOST: 'every interface' })).to.throw(ConfigError, 'HOST');
    });

    it('in LAN mode is every interface, announced at the LAN address unless HOST and PUBLIC_BASE_URL say otherwise', () => {
      expect(loadConfig(base, { lan: { address: '192.168.1.23' } })).to.include({ host: '0.0.0.0', publicBaseUrl: 'http://192.168.1.23:8080' });
      expect(loadConfig({ ...base, HOST: '192.168.1.23', PUBLIC_BASE_URL: 'http://phone-lab.local:8080' }, { lan: { address: null } }))
        .to.include({ host: '192.168.1.23', publicBaseUrl: 'http://phone-lab.local:8080' });
      expect(() => loadConfig(base, { lan: { address: null } })).to.throw(ConfigError, 'PUBLIC_BASE_URL');
    });
  });

  it('reads S3_PUBLIC_URL as an origin only', () => {
    expect(loadConfig({ ...base, S3_PUBLIC_URL: 'https://media.example.com' }).s3PublicUrl).to.equal('https://media.example.com');
    expect(loadConfig(base).s3PublicUrl).to.equal(null);
    expect(() => loadConfig({ ...base, S3_PUBLIC_URL: 'https://cdn.example.com/media' })).to.throw(ConfigError, 'S3_PUBLIC_URL');
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
