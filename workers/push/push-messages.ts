import { languageOf } from '../../common/language';
import type { PushJob, PushKind } from '../../db/push/push-job';

/** Texts of each kind of push, by the user's locale (`ru` unless `en`), chosen by a field of its data. */
interface Text {
  title: string;
  body: string;
}

const texts: Record<'ru' | 'en', Record<PushKind, Record<string, Text>>> = {
  ru: {
    // By `status`.
    generation: {
      succeeded: { title: 'Готово!', body: 'Ваш результат готов: откройте приложение, чтобы посмотреть.' },
      failed: { title: 'Не получилось', body: 'Генерация не удалась. Кредиты вернулись на баланс.' },
    },
    // By `days_left`.
    subscription_reminder: {
      3: { title: 'Подписка', body: 'Через 3 дня заканчивается период подписки: неизрасходованные кредиты плана сгорят.' },
      1: { title: 'Подписка', body: 'Завтра заканчивается период подписки: успейте потратить кредиты плана.' },
    },
    // By `status`.
    effect_earned: {
      settled: { title: 'Вы заработали кредиты', body: 'Кредиты за ваш эффект зачислены на баланс.' },
    },
    effect_removed: {
      archived: { title: 'Эффект снят с публикации', body: 'Модератор убрал ваш эффект из каталога.' },
    },
  },
  en: {
    generation: {
      succeeded: { title: 'Ready!', body: 'Your result is ready: open the app to see it.' },
      failed: { title: 'Something went wrong', body: 'The generation failed. Your credits are back on your balance.' },
    },
    subscription_reminder: {
      3: { title: 'Subscription', body: 'Your subscription period ends in 3 days: unused plan credits will expire.' },
      1: { title: 'Subscription', body: 'Your subscription period ends tomorrow: use your plan credits before they expire.' },
    },
    effect_earned: {
      settled: { title: 'You earned credits', body: 'Credits for your effect are on your balance.' },
    },
    effect_removed: {
      archived: { title: 'Effect removed', body: 'A moderator removed your effect from the catalog.' },
    },
  },
};

/** The data field that picks the text of each kind. */
const textKey: Record<PushKind, string> = { generation: 'status', subscription_reminder: 'days_left', effect_earned: 'status', effect_removed: 'status' };

/** The push's title and body in the user's language; null for a kind or data it has no text for. */
export function pushText(locale: string, job: Pick<PushJob, 'kind' | 'data'>): Text | null {
  const byKind = texts[languageOf(locale)][job.kind] as Record<string, Text> | undefined;
  const key = textKey[job.kind];
  if (!byKind || !key) return null;
  return Object.hasOwn(byKind, job.data[key] ?? '') ? byKind[job.data[key]] : null;
}
