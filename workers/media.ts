import { stopAll, type RunningPart, type Services } from '../services';
import { startPreviewConsumer } from './generations/preview-consumer';
import { startSamplePreviews } from './user-effects/sample-preview';

/**
 * The `media` role: CPU-heavy copies (video generations' posters, user effects' sample previews) on
 * their own queues and process type, so ffmpeg's seconds never delay the workers that hold provider
 * slots. An image generation's preview (milliseconds, mostly in libvips's threads) is made by the
 * worker that copied the result, from the bytes it holds.
 */
export async function startMedia(services: Services): Promise<RunningPart> {
  const parts: RunningPart[] = [
    // `user-effect-media` jobs (NOTIFY `user_effect_media`): the sample's preview, then the user
    // effect's status moves on. Before the generation previews, whose LISTEN is then the hub's
    // last, the one readiness checks look for (`pg_stat_activity.query`).
    await startSamplePreviews(services),
    // `generation-media` jobs (NOTIFY `generation_media`): a video's poster, then succeeded.
    await startPreviewConsumer(services),
  ];
  services.log.info({ role: 'media', parts: parts.length }, 'role started');
  return stopAll(parts);
}
