import { randomUUID } from 'node:crypto';
import { insertProcessing } from '../../db/user-effects/insert-processing';
import { userEffectCost, type UserEffectRow, type Visibility } from '../../db/user-effects/model';
import type { Services } from '../../services';
import { checkedUploads } from '../generations/create';
import { invalidField } from '../http/errors';
import { submissionRefusal } from './submission-limits';

export interface SubmitBody {
  name: string;
  description?: string;
  prompt: string;
  output_type: 'image' | 'video';
  characters?: { min_photos: number; max_photos: number }[];
  sample_upload_id: string;
  visibility?: Visibility;
}

const onePerson = [{ min_photos: 1, max_photos: 1 }];

/**
 * `POST /v1/user-effects`, checks in order: the body (the route's schema, then the people rules
 * JSON Schema cannot say: the first person required, `min_photos <= max_photos`), the sample upload
 * (`404` absent or another's, `422` not completed or above 15 MB, as for a generation), then the
 * submission limits (`429`); then the user effect is `processing` with its first moderation job.
 * The cost is the server's (10 for an image, 40 for a video).
 */
export async function submitUserEffect(services: Services, userId: string, body: SubmitBody): Promise<UserEffectRow> {
  const characters = body.characters ?? onePerson;
  if (characters[0].min_photos < 1) throw invalidField(['body', 'characters', 0, 'min_photos'], 'the first person is required: min_photos at least 1');
  characters.forEach((character, index) => {
    if (character.min_photos > character.max_photos) throw invalidField(['body', 'characters', index], 'min_photos must not exceed max_photos');
  });
  const { byId: uploads } = await checkedUploads(services, userId, [body.sample_upload_id], () => ['body', 'sample_upload_id']);
  const sample = uploads.get(body.sample_upload_id.toLowerCase())!;
  return services.db.transaction(async (trx) => {
    const refusal = await submissionRefusal(trx, userId, services.config.marketplace);
    if (refusal) throw refusal;
    return insertProcessing(trx, services.boss, {
      id: randomUUID(),
      user_id: userId,
      visibility: body.visibility ?? 'public',
      name: body.name,
      description: body.description ?? '',
      prompt: body.prompt,
      output_type: body.output_type,
      characters,
      cost: userEffectCost[body.output_type],
      sample_key: sample.object_key,
    });
  });
}
