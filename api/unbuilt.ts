import type { Access } from './http/authentication';
import { defineRoute, type Method, type Route } from './http/route';

/**
 * Contract paths that are declared but not built yet: they answer `501 not_implemented` after
 * authentication and the guest check (docs/mobile.md), never `404`. Building one means
 * moving its line into its domain's `routes.ts`.
 */
const unbuilt: [Method, string, Access][] = [
  // Every contract path is built; a new one not built yet goes here.
];

export const unbuiltRoutes: Route[] = unbuilt.map(([method, path, access]) =>
  defineRoute({ method, path, access, summary: 'Not implemented yet: answers 501 after authentication and the guest check.' }));
