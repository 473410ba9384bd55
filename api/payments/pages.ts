import type { Middleware } from 'koa';
import type { ApiContext } from '../http/context';
import { appLink } from '../../media/pages/app-link';
import { sendPage } from '../../media/pages/headers';
import { html } from '../../media/pages/html';
import { chooseLanguage } from '../../media/pages/language';
import { renderPage } from '../../media/pages/layout';
import { isUuid } from '../../common/validation';
import { languageOf, type Language } from '../../common/language';

/**
 * The browser pages the processor sends the payer back to: `/v1/payments/{id}/return` (approved)
 * and `/v1/payments/{id}/fail` (declined). Static by design: they check nothing and prove nothing,
 * so they answer 200 for any id; the app learns the outcome from `GET /v1/payments/{id}` or the stream.
 * Each has a button back to the app at `{APP_LINK_BASE}payments/<id>/return|fail`.
 * Language: the payment owner's profile locale (the processor's page spoke it too), else
 * `?lang=ru|en`, else the browser's Accept-Language, else Russian.
 */
const pagePath = /^\/v1\/payments\/([^/]+)\/(return|fail)\/?$/;

type Outcome = 'return' | 'fail';

const texts = {
  ru: {
    return: { title: 'Оплата принята в обработку', text: 'Спасибо! Вернитесь в приложение: кредиты появятся, как только банк подтвердит оплату.' },
    fail: { title: 'Оплата не прошла', text: 'Банк отклонил платёж. Вернитесь в приложение и попробуйте ещё раз.' },
    back: 'Вернуться в приложение',
    close: 'Эту страницу можно закрыть.',
  },
  en: {
    return: { title: 'Payment is being processed', text: 'Thank you! Go back to the app: the credits appear as soon as the bank confirms the payment.' },
    fail: { title: 'Payment declined', text: 'The bank declined the payment. Go back to the app and try again.' },
    back: 'Back to the app',
    close: 'You can close this page.',
  },
} as const;

function payerPage(language: Language, outcome: Outcome, paymentId: string, appLinkBase: string): string {
  const t = texts[language];
  return renderPage({
    language,
    title: t[outcome].title,
    icon: outcome === 'return' ? 'success' : 'failure',
    tone: outcome === 'return' ? 'ok' : 'bad',
    body: html`<p>${t[outcome].text}</p>
<a class="button" id="open-app" href="${appLink(appLinkBase, 'payments', paymentId, outcome)}">${t.back}</a>
<p class="hint">${t.close}</p>`,
  });
}

export function paymentPages(): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    const match = pagePath.exec(ctx.path);
    if (!match || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    const [, encodedId, outcome] = match as unknown as [string, string, Outcome];
    ctx.state.route = `/v1/payments/{id}/${outcome}`;
    const paymentId = safeDecode(encodedId);
    const { db, config } = ctx.services;
    const owner = isUuid(paymentId)
      ? await db('payments').join('users', 'users.id', 'payments.user_id').where('payments.id', paymentId).first('users.locale')
      : undefined;
    const language = chooseLanguage({
      known: owner ? languageOf(owner.locale) : null,
      lang: ctx.query.lang,
      acceptLanguage: ctx.get('Accept-Language'),
    });
    sendPage(ctx, { html: payerPage(language, outcome, paymentId, config.appLinkBase) });
  };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
