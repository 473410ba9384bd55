import { languageOf } from '../../db/accounts/user-locale';

/** Texts of the generation push, by the user's locale (`ru` unless `en`). */
const texts = {
  ru: {
    succeeded: { title: 'Готово!', body: 'Ваш результат готов: откройте приложение, чтобы посмотреть.' },
    failed: { title: 'Не получилось', body: 'Генерация не удалась. Кредиты вернулись на баланс.' },
  },
  en: {
    succeeded: { title: 'Ready!', body: 'Your result is ready: open the app to see it.' },
    failed: { title: 'Something went wrong', body: 'The generation failed. Your credits are back on your balance.' },
  },
} as const;

export type TerminalStatus = keyof (typeof texts)['ru'];

export function isTerminalStatus(status: string): status is TerminalStatus {
  return status === 'succeeded' || status === 'failed';
}

export function generationPushText(locale: string, status: TerminalStatus): { title: string; body: string } {
  return texts[languageOf(locale)][status];
}
