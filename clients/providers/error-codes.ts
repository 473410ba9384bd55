/**
 * Provider error types that have a name of their own in our error_code vocabulary (the contract). Any other type
 * passes through unchanged, because the contract keeps the set of error codes open for them.
 */
const errorCodeByProviderType = new Map<string, string>([
  ['safety', 'safety'],
  ['bad_input_image', 'bad_input_image'],
  ['internal_error', 'provider_error'],
  ['provider_error', 'provider_error'],
]);

/** error_code of a task the provider reports as failed, from its `error.type`. */
export function errorCodeForFailedTask(providerType: string | null): string {
  if (!providerType) return 'provider_error';
  return errorCodeByProviderType.get(providerType) ?? providerType;
}

/** error_code of a submission refused with a 4xx other than 429; every refusal is final. */
export function errorCodeForRefusedSubmission(status: number, providerType: string | null): string {
  if (status === 401 || status === 403) return 'lost_account';
  if (status === 404) return 'no_model';
  if (providerType === 'bad_input_image') return 'bad_input_image';
  // The model's input schema refused what the route built (Replicate, fal): the route is wrong, not the photo.
  if (status === 422) return 'invalid_input';
  return 'provider_error';
}

/** error_code of a poll refused with a 4xx other than 408/429: the key no longer works, or the task is gone. */
export function errorCodeForRefusedPoll(status: number): string {
  return status === 401 || status === 403 ? 'lost_account' : 'provider_error';
}
