import type { Access } from './http/authentication';
import { defineRoute, type Method, type Route } from './http/route';

/**
 * Contract paths that are declared but not built yet: they answer `501 not_implemented` after
 * authentication and the guest check (decisions.md section 4), never `404`. Building one means
 * moving its line into its domain's `routes.ts`.
 */
const unbuilt: [Method, string, Access][] = [
  ['POST', '/v1/auth/anonymous', 'public'],
  ['POST', '/v1/auth/register', 'optional'],
  ['POST', '/v1/auth/login', 'public'],
  ['POST', '/v1/auth/idp_a', 'optional'],
  ['POST', '/v1/auth/idp_b', 'optional'],
  ['POST', '/v1/auth/idp_c', 'optional'],
  ['POST', '/v1/auth/idp_d', 'optional'],
  ['POST', '/v1/auth/refresh', 'public'],
  ['POST', '/v1/auth/logout', 'token'],
  ['POST', '/v1/auth/change-password', 'registered'],
  ['GET', '/v1/me', 'token'],
  ['PATCH', '/v1/me', 'token'],
  ['DELETE', '/v1/me', 'token'],
  ['POST', '/v1/me/avatar/upload-url', 'token'],
  ['PUT', '/v1/me/avatar', 'token'],
  ['DELETE', '/v1/me/avatar', 'token'],
  ['GET', '/v1/referral', 'registered'],
  ['GET', '/v1/credits/balance', 'token'],
  ['GET', '/v1/credits/transactions', 'token'],
  ['POST', '/v1/devices', 'token'],
  ['DELETE', '/v1/devices/{id}', 'token'],
  ['POST', '/v1/uploads', 'token'],
  ['GET', '/v1/uploads/{id}', 'token'],

  ['GET', '/v1/categories', 'public'],
  ['GET', '/v1/effects', 'public'],
  ['GET', '/v1/effects/{id_or_slug}', 'public'],
  ['GET', '/v1/tags', 'public'],
  ['GET', '/v1/authors/{author_id}', 'public'],
  ['POST', '/v1/effects/{id}/complaints', 'registered'],

  ['POST', '/v1/generations', 'token'],
  ['GET', '/v1/generations', 'token'],
  ['GET', '/v1/generations/{id}', 'token'],
  ['POST', '/v1/generations/{id}/hide', 'token'],
  ['GET', '/v1/generations/{id}/stream', 'token'],

  ['GET', '/v1/payments/products', 'token'],
  ['POST', '/v1/payments', 'registered'],
  ['GET', '/v1/payments/{id}', 'token'],
  ['POST', '/v1/payments/{id}/refresh', 'token'],
  ['GET', '/v1/payments/{id}/stream', 'token'],

  ['POST', '/v1/offers/paywall-dismissed', 'registered'],
  ['GET', '/v1/offers/current', 'registered'],
  ['POST', '/v1/offers/{id}/dismiss', 'registered'],

  // Sections the contract only refers to; decisions.md section 4 keeps them at 501.
  ['GET', '/v1/subscriptions/plans', 'token'],
  ['GET', '/v1/subscriptions', 'registered'],
  ['POST', '/v1/subscriptions', 'registered'],
  ['POST', '/v1/subscriptions/{id}/cancel', 'registered'],
  ['GET', '/v1/user-effects', 'registered'],
  ['POST', '/v1/user-effects', 'registered'],
  ['GET', '/v1/user-effects/account', 'registered'],
  ['GET', '/v1/user-effects/earnings', 'registered'],
  ['GET', '/v1/user-effects/{id}', 'registered'],
  ['DELETE', '/v1/user-effects/{id}', 'registered'],
  ['POST', '/v1/user-effects/{id}/publish', 'registered'],
  ['POST', '/v1/user-effects/{id}/unpublish', 'registered'],
  ['GET', '/v1/user-effects/{id}/stream', 'registered'],
  ['GET', '/v1/studio/categories', 'token'],
  ['POST', '/v1/studio/estimate', 'token'],
  ['POST', '/v1/studio/generations', 'registered'],
  ['POST', '/v1/speech/transcriptions', 'registered'],
];

export const unbuiltRoutes: Route[] = unbuilt.map(([method, path, access]) =>
  defineRoute({ method, path, access, summary: 'Not implemented yet: answers 501 after authentication and the guest check.' }));
