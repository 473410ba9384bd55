import { archiveUserEffect } from '../../db/user-effects/archive-user-effect';
import type { UserEffectRow } from '../../db/user-effects/model';
import { publishUserEffect } from '../../db/user-effects/publish-user-effect';
import { unpublishUserEffect } from '../../db/user-effects/unpublish-user-effect';
import type { Services } from '../../services';
import { errors, invalidStatus } from '../http/errors';
import { submissionRefusal } from './submission-limits';
import { findOwnUserEffect } from './views';

/**
 * The author's moves (docs/mobile.md, "The marketplace of user effects"), each checked in the order: absent or another's
 * `404`, then the status (`422 invalid_status`), then for publish the submission limits (`429`).
 * The guarded statement decides under its row lock; a status that changed since the read is
 * answered as the status it found.
 */
export async function publish(services: Services, userId: string, id: string): Promise<UserEffectRow> {
  const own = await ownOrNotFound(services, userId, id);
  if (own.status !== 'private') throw invalidStatus(`only a private user effect can be published; this one is ${own.status}`);
  return services.db.transaction(async (trx) => {
    const refusal = await submissionRefusal(trx, userId, services.config.marketplace);
    if (refusal) throw refusal;
    const published = await publishUserEffect(trx, services.boss, { userEffectId: own.id, userId });
    if (!published) throw invalidStatus('only a private user effect can be published');
    return published;
  });
}

export async function unpublish(services: Services, userId: string, id: string): Promise<UserEffectRow> {
  const own = await ownOrNotFound(services, userId, id);
  if (own.status !== 'approved') throw invalidStatus(`only an approved user effect can be unpublished; this one is ${own.status}`);
  const unpublished = await services.db.transaction((trx) => unpublishUserEffect(trx, { userEffectId: own.id, userId }));
  if (!unpublished) throw invalidStatus('only an approved user effect can be unpublished');
  return unpublished;
}

/** The author's removal: `archived`, stream only (no push, earnings untouched). Archived already: `422`. */
export async function removeOwn(services: Services, userId: string, id: string): Promise<void> {
  const own = await ownOrNotFound(services, userId, id);
  if (own.status === 'archived') throw invalidStatus('the user effect is archived already');
  const archived = await services.db.transaction((trx) => archiveUserEffect(trx, { userEffectId: own.id, userId, by: 'author', reason: null }));
  if (!archived) throw invalidStatus('the user effect is archived already');
}

async function ownOrNotFound(services: Services, userId: string, id: string): Promise<UserEffectRow> {
  const own = await findOwnUserEffect(services.db, userId, id);
  if (!own) throw errors.notFound('User effect not found.');
  return own;
}
