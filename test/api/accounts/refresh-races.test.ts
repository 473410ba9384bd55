import { expect } from 'chai';
import { issueRefreshToken } from '../../../db/accounts/refresh-tokens';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';

describe('concurrent refreshes of one token', function () {
  this.timeout(120_000);
  const t = useTestApp({ config: { RATE_AUTH_BURST: '100000', RATE_AUTH_PER_MINUTE: '100000' } });
  beforeEach(() => resetDatabase());

  const issue = async (userId: string) => (await issueRefreshToken(services().db, { userId, deviceHash: null, ttlSeconds: 3600 })).token;

  // Before the user's row was locked first, a loser whose update by token_hash had waited for the
  // winner kept the lock on the superseded row, then revoked the family by user_id in the other
  // order than a second loser: deadlock, 500 to several (one run in two failed within 100 bursts).
  it('20 at once, 80 times over: one 200 and nineteen 401 auth_required each time, never a deadlock', async () => {
    for (let burst = 0; burst < 80; burst += 1) {
      const user = await makeUser();
      const token = await issue(user.id);
      // Other sessions of the same user: the losers' revocation takes their rows too.
      for (let session = 0; session < burst % 4; session += 1) await issue(user.id);
      const answers = await Promise.all(Array.from({ length: 20 }, () => t.api.post('/v1/auth/refresh', { refresh_token: token })));
      const failures = answers.filter((answer) => answer.status >= 500).map((answer) => answer.text);
      expect(failures, `burst ${burst}`).to.deep.equal([]);
      expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, ...Array(19).fill(401)]);
      for (const loser of answers.filter((answer) => answer.status === 401)) expect(loser.body.error.code).to.equal('auth_required');
    }
  });
});
