import type { Access } from './http/authentication';
import { defineRoute, type Method, type Route } from './http/route';

/**
 * Contract paths that are declared but not built yet: they answer `501 not_implemented` after
 * authentication and the guest check (README, "The API"), never `404`. Building one means
 * moving its line into its domain's `routes.ts`.
 */
const unbuilt: [Method, string, Access][] = [
  // Sections the contract only refers to: they answer 501 until built.
  ['GET', '/v1/user-effects', 'registered'],
  ['POST', '/v1/user-effects', 'registered'],
  ['GET', '/v1/user-effects/account', 'registered'],
  ['GET', '/v1/user-effects/earnings', 'registered'],
  ['GET', '/v1/user-effects/{id}', 'registered'],
  ['DELETE', '/v1/user-effects/{id}', 'registered'],
  ['POST', '/v1/user-effects/{id}/publish', 'registered'],
  ['POST', '/v1/user-effects/{id}/unpublish', 'registered'],
  ['GET', '/v1/user-effects/{id}/stream', 'registered'],
];

export const unbuiltRoutes: Route[] = unbuilt.map(([method, path, access]) =>
  defineRoute({ method, path, access, summary: 'Not implemented yet: answers 501 after authentication and the guest check.' }));
