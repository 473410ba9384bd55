/** What a provider sign-in learned about the person, whatever the provider's protocol. */
export type Provider = 'idp_a' | 'idp_b' | 'idp_c' | 'idp_d';

export type IdpCButton = 'btn_1' | 'btn_2' | 'btn_3';

export interface ProviderProfile {
  provider: Provider;
  subject: string;
  /** An email the provider vouches for (idp_a/idp_b verified, idp_d primary); never idp_c's. */
  linkableEmail: string | null;
  name: string | null;
  /** idp_c: the button used for this sign-in. */
  button: IdpCButton | null;
  /** idp_b: the refresh token from the authorization code (sealed before it is kept). */
  refreshToken: string | null;
}

/** The longest name the profile keeps (contract field limit). */
const maxNameLength = 120;

export function profileName(value: unknown): string | null {
  if (typeof value !== 'string' || !value.trim()) return null;
  return value.trim().slice(0, maxNameLength);
}
