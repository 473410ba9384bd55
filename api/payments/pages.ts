import type { Middleware } from 'koa';
import type { ApiContext } from '../http/context';
import type { Language } from './products';

/**
 * The browser pages the processor sends the payer back to: `/v1/payments/{id}/return` (approved)
 * and `/v1/payments/{id}/fail` (declined). Static by design: they check nothing and prove nothing,
 * so they answer 200 for any id; the app learns the outcome from `GET /v1/payments/{id}` or the stream.
 * Language: `?lang=ru|en`, else the browser's Accept-Language, else Russian.
 */
const pagePath = /^\/v1\/payments\/[^/]+\/(return|fail)\/?$/;

const texts = {
  ru: {
    return: { title: 'Оплата принята в обработку', text: 'Спасибо! Вернитесь в приложение: кредиты появятся, как только банк подтвердит оплату.' },
    fail: { title: 'Оплата не прошла', text: 'Банк отклонил платёж. Вернитесь в приложение и попробуйте ещё раз.' },
    back: 'Эту страницу можно закрыть.',
  },
  en: {
    return: { title: 'Payment is being processed', text: 'Thank you! Go back to the app: the credits appear as soon as the bank confirms the payment.' },
    fail: { title: 'Payment declined', text: 'The bank declined the payment. Go back to the app and try again.' },
    back: 'You can close this page.',
  },
} as const;

export function paymentPages(): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    const match = pagePath.exec(ctx.path);
    if (!match || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    ctx.state.route = `/v1/payments/{id}/${match[1]}`;
    const language = pageLanguageOf(ctx.query.lang, ctx.get('Accept-Language'));
    const t = texts[language];
    const page = t[match[1] as 'return' | 'fail'];
    ctx.status = 200;
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = `<!doctype html>
<html lang="${language}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${page.title}</title></head>
<body>
<h1>${page.title}</h1>
<p>${page.text}</p>
<p>${t.back}</p>
</body>
</html>
`;
  };
}

function pageLanguageOf(lang: unknown, acceptLanguage: string): Language {
  const asked = typeof lang === 'string' ? lang.trim().toLowerCase() : '';
  if (asked === 'en' || asked === 'ru') return asked;
  const preferred = acceptLanguage.split(',')[0]?.trim().toLowerCase() ?? '';
  return preferred.startsWith('en') ? 'en' : 'ru';
}
