import type { ModelRoute, ProviderKind } from '../../common/model-route';

/**
 * What the pool needs from an AI provider: start a task on one of its accounts, follow it, fetch its
 * result. One adapter per provider kind speaks that provider's protocol.
 */

export interface ProviderAccount {
  kind: ProviderKind;
  /** The account's API token (Replicate), key (fal) or key (the simulator). */
  apiKey: string;
}

/**
 * A photo the provider reads itself: a presigned link of our storage, or the link of a file staged
 * with the provider (`stageFile`); `person` is the 0-based person index.
 */
export interface ProviderInput {
  url: string;
  person: number;
}

export interface ProviderRequest {
  /** The model and how its input is built from `inputs` and `prompt`, for this adapter's provider kind. */
  route: ModelRoute;
  /** Photos, in order; a studio task may have none (`text_to_image`, `ask`). */
  inputs: ProviderInput[];
  /** What a studio task is asked to do; absent for an effect. */
  prompt?: string;
  /**
   * Our name for the task (the generation id), sent with it: the provider keeps one task per
   * reference and account, and `findTask` finds it again when the answer to the submission was lost.
   */
  clientReference: string;
  /** Where the provider calls back when the task finishes (`clients/providers/task-callback.ts`); polling covers a lost call. */
  callbackUrl?: string;
}

/**
 * `busy`: the account runs its concurrency cap, put it in cooldown for `retryAfterS`.
 * `rejected`: final, `errorCode` is the generation's error_code. `mayBePhotos`: a refusal whose code
 * is not `bad_input_image` may still mean the provider could not read a photo it was sent.
 * `unavailable`: transient (5xx, timeout, network), submit again later; `reason` is for logs.
 * `maybeAccepted`: the request may have reached the provider (no answer in time, a connection
 * reset, a 5xx): a task may exist under the client reference, to be looked up before any new try.
 */
export type SubmitOutcome =
  | { kind: 'accepted'; taskId: string }
  | { kind: 'busy'; retryAfterS: number }
  | { kind: 'rejected'; errorCode: string; message: string | null; mayBePhotos?: boolean }
  | { kind: 'unavailable'; reason: string; maybeAccepted: boolean };

/**
 * The task a client reference names: found, surely absent, unknown for now (the provider did not
 * answer), or `unknowable`: the provider has no way to tell (fal keeps no reference of ours), which
 * says nothing about whether it answers, so it does not count against the account's circuit.
 */
export type TaskLookup =
  | { kind: 'found'; taskId: string }
  | { kind: 'absent' }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'unknowable'; reason: string };

/**
 * `succeeded` with a null `resultUrl` is the provider's fault: the caller fails the generation with
 * `no_result_url`, unless it expects text and the output holds it inline (`text`, a language model's
 * answer, given only when the output holds no link).
 */
export type PollOutcome =
  | { kind: 'running' }
  | { kind: 'succeeded'; resultUrl: string | null; text?: string }
  | { kind: 'failed'; errorCode: string; message: string | null }
  | { kind: 'unavailable'; reason: string };

/** A file's bytes and media type, as uploaded to the provider's file store. */
export interface FileToStage {
  body: Buffer;
  contentType: string;
}

/** A file the provider keeps at `url` until `expiresAt`. */
export interface StagedFile {
  kind: 'staged';
  url: string;
  expiresAt: Date;
}

/** `unavailable`: not staged now (the caller sends its own link instead). */
export type StageOutcome = StagedFile | { kind: 'unavailable'; reason: string };

export interface ProviderResult {
  body: Buffer;
  contentType: string;
}

/** A result file larger than the adapter takes: unusable as it is, so `result_rejected` rather than another try. */
export class ResultTooLargeError extends Error {
  override readonly name = 'ResultTooLargeError';
}

/** Expected provider answers come back as outcomes; only `fetchResult` throws, when the download fails. */
export interface ProviderAdapter {
  submit(account: ProviderAccount, request: ProviderRequest): Promise<SubmitOutcome>;
  findTask(account: ProviderAccount, clientReference: string): Promise<TaskLookup>;
  /**
   * `route`: the one the task was submitted with. fal needs it to name the task (its queue's URLs
   * hold the app id) and Replicate to find the result in the output; the simulator's tasks need none.
   */
  poll(account: ProviderAccount, taskId: string, route?: ModelRoute): Promise<PollOutcome>;
  /**
   * What the callback of a finished task said (`answer` of `provider-webhooks.ts`, kept on the row
   * until its poll), read as `poll` reads the provider's answer, with the same `route`.
   */
  outcomeOfCallback(answer: unknown, route?: ModelRoute): PollOutcome;
  fetchResult(url: string): Promise<ProviderResult>;
  /**
   * Uploads a photo to the provider's file store, so that a task naming its link starts without
   * downloading it (slot time). Optional: a provider without a file store is sent our links.
   */
  stageFile?(account: ProviderAccount, file: FileToStage): Promise<StageOutcome>;
  /**
   * Asks the provider to stop a task (a generation cancelled or timed out while it runs), so it is
   * not paid for further. Best effort: a failure is only logged. Optional: the simulator's tasks end
   * by themselves.
   */
  cancel?(account: ProviderAccount, taskId: string, route?: ModelRoute): Promise<void>;
}
