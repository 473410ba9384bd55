import Router from '@koa/router';
import type { ApiContext } from '../http/context';
import { referralLink } from './referrals';

/**
 * `GET {LINK_BASE}/r/<code>`: the web invitation page, shown when the app is not installed (with the
 * app installed the operating system opens the app on the same universal/app link).
 */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

function invitationPage(code: string | null, link: string): string {
  const title = code ? 'You are invited' : 'Invitation not found';
  const text = code
    ? `Install the app and open this link again to join with invitation code <strong>${escapeHtml(code)}</strong>: you both get bonus credits once you register.`
    : 'This invitation link is not valid. You can still install the app.';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
</head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem">
<h1>${title}</h1>
<p>${text}</p>
${code ? `<p><a href="${escapeHtml(link)}">Open in the app</a></p>` : ''}
</body>
</html>
`;
}

export function referralPageRouter(): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  router.get('/r/:code', async (ctx) => {
    const { db, config } = ctx.services;
    const code = ctx.params.code.trim().toUpperCase();
    const inviter = code.length <= 32 ? await db('users').where({ referral_code: code }).first('referral_code') : undefined;
    ctx.status = inviter ? 200 : 404;
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = invitationPage(inviter?.referral_code ?? null, referralLink(config.linkBase, code));
  });
  return router;
}
