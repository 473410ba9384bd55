import type { ModelRoute, ProviderKind } from '../../common/model-route';

/** Types of the generations domain: rows as stored, and the pieces the pipeline passes around. */

export type GenerationStatus = 'pending' | 'processing' | 'succeeded' | 'failed';
export const generationStatuses: GenerationStatus[] = ['pending', 'processing', 'succeeded', 'failed'];

/** `text`: a studio task that answers in words (`result_text`, no file). */
export type OutputType = 'image' | 'video' | 'text';

/** An effect generation runs a catalog effect; a studio one a studio task with a prompt (docs/mobile.md, "Studio, voice input, queue position and cancel"). */
export type GenerationKind = 'effect' | 'studio';

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

/** A photo kept in the provider's file store for the task: its link there, and the 0-based person. */
export interface StagedInput {
  url: string;
  person: number;
}

export interface GenerationRow {
  id: string;
  user_id: string;
  kind: GenerationKind;
  /** Set on an effect generation, null on a studio one. */
  effect_id: string | null;
  /** Set on a studio generation, null on an effect one. */
  studio_category_id: string | null;
  /** The studio prompt (1..10000 characters); null on an effect generation. */
  prompt: string | null;
  status: GenerationStatus;
  cost: number;
  output_type: OutputType;
  model: string;
  /** The provider kind it runs on, chosen at its creation: it waits in that kind's line for a slot of that kind. */
  provider_kind: ProviderKind;
  /** How it runs there (model, input template, output path), as chosen at its creation; null on generations from before routes. */
  route: ModelRoute | null;
  inputs: GenerationInput[];
  error_code: string | null;
  submit_job_id: string | null;
  dispatch_until: Date | null;
  dispatch_attempts: number;
  inputs_checked_at: Date | null;
  /** The API read each photo's header at the request and found a usable image: the submission reads none. */
  photo_headers_checked: boolean;
  /** The photos as staged with the provider ahead of the slot (its links, in `inputs` order), kept by it until `staged_inputs_until`. */
  staged_inputs: StagedInput[] | null;
  staged_inputs_until: Date | null;
  checking_until: Date | null;
  provider_account_id: number | null;
  provider_task_id: string | null;
  next_poll_at: Date | null;
  poll_count: number;
  /** The fields of the task's finished callback that a poll reads, until the poll it made due takes them (`claim-due-polls.ts`). */
  callback_answer: unknown;
  result_key: string | null;
  result_content_type: string | null;
  result_stored_at: Date | null;
  /** The answer of a text task (at most 1000 characters), stored instead of a result file. */
  result_text: string | null;
  preview: StoredGenerationPreview | null;
  hidden_at: Date | null;
  /** The attempt `npm run replay-failed` made of this failed generation (at most one). */
  replayed_as: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** What a status change announces on `generation_status` (the SSE stream shows it; the push job is made from it). */
export interface GenerationStatusEvent {
  id: string;
  user_id: string;
  status: GenerationStatus;
  error_code: string | null;
  /** On a new generation's announcement: the API read every photo's header (`photo_headers_checked`). */
  photo_headers_checked?: boolean;
}
