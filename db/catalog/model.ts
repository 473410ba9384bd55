import type { Language } from '../../common/language';
import type { ModelRoute, ProviderKind } from '../../common/model-route';

/** What the catalog's tables hold, as the importer writes it and the views read it. */

/** One person an effect takes: `min_photos = 0` marks an optional person. */
export interface Character {
  min_photos: number;
  max_photos: number;
}

export interface FocusPoint {
  x: number;
  y: number;
}

/** The copies of the poster (and clip) as `effects.preview` keeps them: object keys, not URLs. */
export interface StoredPreview {
  thumb: string;
  card: string;
  full: string;
  animation: string | null;
  video: string | null;
  width: number;
  height: number;
  blurhash: string | null;
}

/** The columns of `effects` that describe its preview (object keys; URLs are made when shown). */
export interface PreviewColumns {
  poster_key: string;
  preview_video_key: string | null;
  preview_animation_key: string | null;
  preview: StoredPreview | null;
  focus: FocusPoint | null;
  video_focus: FocusPoint | null;
}

/** A text in every catalog language, as the importer takes it. */
export type Localized = Record<Language, string>;

/** What runs an effect (or a studio category) on each provider kind: `effects.runs`, `studio_categories.runs`. */
export type ModelRoutes = Partial<Record<ProviderKind, ModelRoute>>;
