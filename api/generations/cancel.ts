import { setTimeout as delay } from 'node:timers/promises';
import { cancelWaitingGeneration } from '../../db/generations/cancel-waiting-generation';
import type { GenerationRow } from '../../db/generations/model';
import type { Services } from '../../services';
import { errors, invalidStatus } from '../http/errors';
import { findOwnGeneration } from './views';

/** How long a cancel waits for a dispatcher that is handing the generation to the provider right now. */
const submissionWaitMs = 5000;
const lookAgainMs = 50;

/**
 * `POST /v1/generations/{id}/cancel` (docs/mobile.md, "Studio, voice input, queue position and cancel"): the owner's waiting generation becomes
 * `failed` / `canceled` and is refunded (`cancelWaitingGeneration`). One a dispatcher has claimed is
 * being submitted: the cancel waits for that to settle (a few milliseconds as a rule), then either
 * cancels it (it went back in line) or answers 422 (it is `processing` now). Any other status is 422
 * `invalid_status`; another's or absent generation is 404. Answers the generation as it is after.
 */
export async function cancelGeneration(services: Services, userId: string, generationId: string): Promise<GenerationRow> {
  const { db, boss } = services;
  const giveUpAt = Date.now() + submissionWaitMs;
  for (;;) {
    const row = await findOwnGeneration(db, userId, generationId);
    if (!row) throw errors.notFound('Generation not found.');
    if (row.status !== 'pending') throw invalidStatus(`only a pending generation can be cancelled; this one is ${row.status}`);
    if (await cancelWaitingGeneration(db, boss, generationId)) return (await findOwnGeneration(db, userId, generationId))!;
    if (Date.now() >= giveUpAt) throw invalidStatus('the generation is being handed to the provider; look at it again in a moment');
    await delay(lookAgainMs);
  }
}
