/** Types of the generations domain: rows as stored, and the pieces the pipeline passes around. */

export type GenerationStatus = 'pending' | 'processing' | 'succeeded' | 'failed';
export const generationStatuses: GenerationStatus[] = ['pending', 'processing', 'succeeded', 'failed'];

export type OutputType = 'image' | 'video';

/** One photo sent to the provider: `person` is the 0-based index in the effect's `characters`. */
export interface GenerationInput {
  upload_id: string;
  object_key: string;
  person: number;
}

/** The generation's preview as stored: object keys, signed when rendered. */
export interface StoredGenerationPreview {
  thumb_key: string;
  /** Video: the poster is the thumb (same key); image: null. */
  poster_key: string | null;
  width: number;
  height: number;
  blurhash: string;
}

export interface GenerationRow {
  id: string;
  user_id: string;
  effect_id: string;
  status: GenerationStatus;
  cost: number;
  output_type: OutputType;
  model: string;
  inputs: GenerationInput[];
  error_code: string | null;
  submit_job_id: string | null;
  dispatch_until: Date | null;
  dispatch_attempts: number;
  inputs_checked_at: Date | null;
  checking_until: Date | null;
  provider_account_id: number | null;
  provider_task_id: string | null;
  next_poll_at: Date | null;
  poll_count: number;
  result_key: string | null;
  result_content_type: string | null;
  result_stored_at: Date | null;
  preview: StoredGenerationPreview | null;
  hidden_at: Date | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** What a status event carries (NOTIFY `generation_status`, the SSE stream and the push job). */
export interface StatusEvent {
  id: string;
  user_id: string;
  status: GenerationStatus;
  error_code: string | null;
}

/** The NOTIFY channel every status change is announced on, creation included. */
export const statusChannel = 'generation_status';

/** Channel on which a stored result wakes the media workers at once instead of at their next poll. */
export const mediaChannel = 'generation_media';

/** Data of a `generation-submit` job: the FIFO ticket of one pending generation. */
export interface SubmitJobData {
  generationId: string;
}

/** Data of a `generation-media` job: make the preview, then mark the generation succeeded. */
export interface MediaJobData {
  generationId: string;
}

/** Data of a `push-send` job sent at every terminal status. */
export interface PushJobData {
  userId: string;
  generationId: string;
  status: 'succeeded' | 'failed';
  errorCode: string | null;
}
