import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../config';

/** Push configuration: each gateway on its own, keys checked at start, a half-done setup refused by name. */
describe('push configuration', () => {
  const base = { DATA_DIR: path.join(os.tmpdir(), 'effects-push-config'), TOKEN_SECRET: 'x'.repeat(32), PAYMENT_NOTIFICATION_SECRET: 'y'.repeat(32) };
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const account = { project_id: 'effects-prod', client_email: 'push@effects-prod.iam.gserviceaccount.com', private_key: rsa };
  const apns = { APNS_KEY: p256, APNS_KEY_ID: 'KEY1234567', APNS_TEAM_ID: 'TEAM123456', APNS_TOPIC: 'app.effects' };

  it('has no gateway and sane retry settings by default', () => {
    const { push } = loadConfig(base);
    expect(push).to.include({ fcm: null, apns: null, attempts: 3, retryBaseMs: 500, maxRetryWaitMs: 10_000, timeoutMs: 10_000 });
  });

  it('reads the FCM service account inline or from a file; FCM_PROJECT_ID overrides its project', () => {
    const inline = loadConfig({ ...base, FCM_SERVICE_ACCOUNT_JSON: JSON.stringify(account) }).push.fcm!;
    expect(inline).to.include({ projectId: 'effects-prod', clientEmail: account.client_email, tokenUri: 'https://oauth2.googleapis.com/token' });
    expect(inline.privateKey.asymmetricKeyType).to.equal('rsa');

    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'fcm-')), 'service-account.json');
    writeFileSync(file, JSON.stringify(account));
    const fromFile = loadConfig({ ...base, FCM_SERVICE_ACCOUNT_JSON_FILE: file, FCM_PROJECT_ID: 'other-project' }).push.fcm!;
    expect(fromFile.projectId).to.equal('other-project');
  });

  it('reads APNs settings, production by default', () => {
    const settings = loadConfig({ ...base, ...apns }).push.apns!;
    expect(settings).to.include({ keyId: 'KEY1234567', teamId: 'TEAM123456', topic: 'app.effects', environment: 'production' });
    expect(loadConfig({ ...base, ...apns, APNS_ENVIRONMENT: 'sandbox' }).push.apns!.environment).to.equal('sandbox');
  });

  const refused: [string, Record<string, string>, RegExp][] = [
    ['FCM JSON that is not JSON', { FCM_SERVICE_ACCOUNT_JSON: '{nope' }, /FCM_SERVICE_ACCOUNT_JSON/],
    ['FCM JSON without a key', { FCM_SERVICE_ACCOUNT_JSON: JSON.stringify({ ...account, private_key: undefined }) }, /client_email, private_key/],
    ['an FCM key that is not RSA', { FCM_SERVICE_ACCOUNT_JSON: JSON.stringify({ ...account, private_key: p256 }) }, /RSA private key/],
    ['both FCM_SERVICE_ACCOUNT_JSON and its _FILE', { FCM_SERVICE_ACCOUNT_JSON: JSON.stringify(account), FCM_SERVICE_ACCOUNT_JSON_FILE: '/x' }, /not both/],
    ['an FCM file that cannot be read', { FCM_SERVICE_ACCOUNT_JSON_FILE: '/nonexistent/account.json' }, /FCM_SERVICE_ACCOUNT_JSON_FILE/],
    ['APNs without a topic', { ...apns, APNS_TOPIC: '' }, /APNS_TOPIC together/],
    ['an APNs key id without a key', { APNS_KEY_ID: 'KEY1234567' }, /APNS_KEY \(or APNS_KEY_FILE\)/],
    ['an APNs key on the wrong curve', { ...apns, APNS_KEY: p384 }, /EC P-256/],
    ['an APNs key that is no key', { ...apns, APNS_KEY: 'not a key' }, /APNS_KEY must hold/],
    ['an unknown APNs environment', { ...apns, APNS_ENVIRONMENT: 'staging' }, /APNS_ENVIRONMENT/],
    ['zero attempts', { PUSH_ATTEMPTS: '0' }, /PUSH_ATTEMPTS/],
  ];
  for (const [what, env, message] of refused) {
    it(`refuses ${what}`, () => {
      expect(() => loadConfig({ ...base, ...env })).to.throw(message);
    });
  }
});
