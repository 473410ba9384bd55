/**
 * Links from a browser page back into the mobile app: `APP_LINK_BASE` (a custom scheme such as
 * `effectsapp://`, or a universal/app link base such as `https://go.example.app/app`) plus a path
 * the app routes on, e.g. `r/<code>` or `payments/<id>/return`. Each segment is percent-encoded.
 */
export function appLink(base: string, ...segments: string[]): string {
  const path = segments.map((segment) => encodeURIComponent(segment)).join('/');
  return base.endsWith('/') ? `${base}${path}` : `${base}/${path}`;
}
