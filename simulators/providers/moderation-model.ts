import { writeFile } from 'node:fs/promises';
import type { ModelInput } from './input-photo';

/**
 * The simulator's moderation model (docs/mobile.md, "The marketplace of user effects"): it reads the texts of a user effect (the
 * task's prompt: name, description and prompt) and its sample photo, and answers a verdict as JSON:
 * `{"verdict": "rejected", "reason": "content_policy"}` when the texts contain the word `forbidden`
 * in any case, `{"verdict": "rejected", "reason": "bad_sample"}` when the sample is no decodable
 * photo, otherwise `{"verdict": "approved"}`; after the simulator's latency, like any task.
 */
export type ModerationVerdict = { verdict: 'approved' } | { verdict: 'rejected'; reason: 'content_policy' | 'bad_sample' };

function moderate(input: ModelInput): ModerationVerdict {
  if (/forbidden/i.test(input.prompt)) return { verdict: 'rejected', reason: 'content_policy' };
  if (!input.still) return { verdict: 'rejected', reason: 'bad_sample' };
  return { verdict: 'approved' };
}

export async function writeModerationVerdict(input: ModelInput, outputPath: string): Promise<void> {
  await writeFile(outputPath, JSON.stringify(moderate(input)), 'utf8');
}
