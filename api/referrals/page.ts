import Router from '@koa/router';
import type { ApiContext } from '../http/context';
import { appLink } from '../../media/pages/app-link';
import { sendPage } from '../../media/pages/headers';
import { html } from '../../media/pages/html';
import { chooseLanguage } from '../../media/pages/language';
import { renderPage } from '../../media/pages/layout';
import type { Language } from '../../common/language';

/**
 * `GET {LINK_BASE}/r/<code>`: the web invitation page, shown when the app is not installed (with the
 * app installed the operating system opens the app on the same universal/app link). Its button
 * opens the app at `{APP_LINK_BASE}r/<code>`. The visitor is not signed in, so the language is
 * `?lang=`, else the browser's, else Russian.
 */
const texts = {
  ru: {
    title: 'Вас пригласили',
    lead: 'Друг приглашает вас в приложение. Откройте его по этой ссылке и зарегистрируйтесь: вы оба получите бонусные кредиты.',
    codeLabel: 'Код приглашения',
    open: 'Открыть в приложении',
    hint: 'Приложение не открылось? Установите его и откройте эту ссылку ещё раз.',
    notFoundTitle: 'Приглашение не найдено',
    notFound: 'Эта ссылка-приглашение недействительна. Приложение всё равно можно установить.',
    openApp: 'Открыть приложение',
  },
  en: {
    title: 'You are invited',
    lead: 'A friend invites you to the app. Open it from this link and sign up: you both get bonus credits.',
    codeLabel: 'Invitation code',
    open: 'Open in the app',
    hint: 'The app did not open? Install it, then open this link again.',
    notFoundTitle: 'Invitation not found',
    notFound: 'This invitation link is not valid. You can still install the app.',
    openApp: 'Open the app',
  },
} as const;

function invitationPage(language: Language, code: string, appLinkBase: string): string {
  const t = texts[language];
  return renderPage({
    language,
    title: t.title,
    icon: 'gift',
    body: html`<p>${t.lead}</p>
<span class="label">${t.codeLabel}</span>
<strong class="code">${code}</strong>
<a class="button" id="open-app" href="${appLink(appLinkBase, 'r', code)}">${t.open}</a>
<p class="hint">${t.hint}</p>`,
  });
}

function notFoundPage(language: Language, appLinkBase: string): string {
  const t = texts[language];
  return renderPage({
    language,
    title: t.notFoundTitle,
    icon: 'unknown',
    tone: 'wait',
    body: html`<p>${t.notFound}</p>
<a class="button secondary" id="open-app" href="${appLinkBase}">${t.openApp}</a>`,
  });
}

export function referralPageRouter(): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  router.get('/r/:code', async (ctx) => {
    const { db, config } = ctx.services;
    const code = ctx.params.code.trim().toUpperCase();
    // A code with U+0000 names nothing (and Postgres would refuse it): the not-found page.
    const inviter = code.length <= 32 && !code.includes('\u0000') ? await db('users').where({ referral_code: code }).first('referral_code') : undefined;
    const language = chooseLanguage({ lang: ctx.query.lang, acceptLanguage: ctx.get('Accept-Language') });
    sendPage(ctx, inviter
      ? { html: invitationPage(language, inviter.referral_code, config.appLinkBase) }
      : { status: 404, html: notFoundPage(language, config.appLinkBase) });
  });
  return router;
}
