import type { ModelRoutes } from '../catalog/model';

/** Statuses of a user effect (contract B, "Marketplace statuses"; docs/mobile.md, "The marketplace of user effects"). */
export type UserEffectStatus = 'processing' | 'approved' | 'rejected' | 'archived' | 'private';
export const userEffectStatuses: UserEffectStatus[] = ['processing', 'approved', 'rejected', 'archived', 'private'];
/** The stream closes at these (contract B, "SSE streams"). */
export const streamClosingStatuses: UserEffectStatus[] = ['approved', 'rejected', 'archived', 'private'];

export type Visibility = 'public' | 'private';
export type RejectionReason = 'content_policy' | 'bad_sample';
export type EarningStatus = 'pending' | 'settled' | 'reversed';

/** The copies of the sample as object keys, in the shape of `effects.preview` (the catalog effect gets them as they are). */
export interface StoredUserEffectPreview {
  thumb: string;
  card: string;
  full: string;
  animation: null;
  video: null;
  width: number;
  height: number;
  blurhash: string | null;
}

export interface UserEffectRow {
  id: string;
  user_id: string;
  status: UserEffectStatus;
  visibility: Visibility;
  effect_id: string | null;
  name: string;
  description: string;
  prompt: string;
  output_type: 'image' | 'video';
  characters: { min_photos: number; max_photos: number }[];
  cost: number;
  sample_key: string;
  poster_key: string | null;
  preview: StoredUserEffectPreview | null;
  rejection_reason: RejectionReason | null;
  moderation_round: number;
  verdict: 'approved' | 'rejected' | null;
  verdict_reason: RejectionReason | null;
  rejected_at: Date | null;
  archived_by: 'author' | 'operator' | null;
  archive_reason: string | null;
  /** When the current moderation round was asked for: the submission, or the latest publish. */
  submitted_at: Date;
  /** When it was last approved (published). */
  approved_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface EarningRow {
  id: string;
  user_effect_id: string;
  effect_id: string;
  generation_id: string;
  user_id: string;
  amount: number;
  status: EarningStatus;
  settles_at: Date;
  settled_at: Date | null;
  reversed_at: Date | null;
  created_at: Date;
}

/** What the stream shows (contract B: `{id, status, effect_id}`); `user_id` lets a listener filter. */
export interface UserEffectStatusEvent {
  id: string;
  user_id: string;
  status: UserEffectStatus;
  effect_id: string | null;
}

export const userEffectCost: Record<'image' | 'video', number> = { image: 10, video: 40 };

/** What runs a user effect's generations, by its output type (USER_EFFECT_IMAGE_RUNS, USER_EFFECT_VIDEO_RUNS): its catalog effect keeps them. */
export type UserEffectRuns = Record<'image' | 'video', ModelRoutes>;
