import { stopAll, type RunningPart, type Services } from '../services';
import { startPreviewConsumer } from './generations/preview-consumer';
import { startSamplePreviews } from './user-effects/sample-preview';

/**
 * The `media` role: CPU-heavy copies (generation previews, user effects' sample previews) on their own queue and process type, so
 * image and video work never delays the workers that hold provider slots.
 */
export async function startMedia(services: Services): Promise<RunningPart> {
  const parts: RunningPart[] = [
    // `generation-media` jobs (NOTIFY `generation_media`): the preview, then succeeded.
    await startPreviewConsumer(services),
    // `user-effect-media` jobs (NOTIFY `user_effect_media`): the sample's preview, then the user effect's status moves on.
    await startSamplePreviews(services),
  ];
  services.log.info({ role: 'media', parts: parts.length }, 'role started');
  return stopAll(parts);
}
