import { profileRoutes } from './accounts/profile-routes';
import { authRoutes } from './accounts/routes';
import { catalogRoutes } from './catalog/routes';
import type { ThematicSearch } from './catalog/thematic-search';
import { creditRoutes } from './credits/routes';
import { generationRoutes } from './generations/routes';
import { defineRoute } from './http/route';
import type { Route } from './http/route';
import { identityRoutes } from './identity/routes';
import { offerRoutes } from './offers/routes';
import { openApiDocument } from './openapi';
import { paymentRoutes } from './payments/routes';
import { pushDeviceRoutes } from './push-devices/routes';
import { referralRoutes } from './referrals/routes';
import { subscriptionRoutes } from './subscriptions/routes';
import { speechRoutes } from './speech/routes';
import { studioRoutes } from './studio/routes';
import { unbuiltRoutes } from './unbuilt';
import { uploadRoutes } from './uploads/routes';
import { userEffectRoutes } from './user-effects/routes';

/** Every `/v1` route of the service: the domains' tables, then the contract paths not built yet. */
export function allRoutes(publicBaseUrl: string, plugins: { thematicSearch?: ThematicSearch } = {}): Route[] {
  const built: Route[] = [...paymentRoutes, ...subscriptionRoutes, ...offerRoutes, ...authRoutes, ...identityRoutes, ...profileRoutes, ...referralRoutes, ...creditRoutes, ...catalogRoutes(plugins), ...uploadRoutes, ...generationRoutes, ...studioRoutes, ...speechRoutes, ...pushDeviceRoutes, ...userEffectRoutes];
  const routes = [...built, ...unbuiltRoutes];
  // The document describes the API, not itself (its one route could fail in no documented way).
  const documented = [...routes];
  let document: Record<string, unknown> | null = null;
  const openapi = defineRoute({
    method: 'GET', path: '/v1/openapi.json', access: 'public',
    summary: 'The machine-readable contract (OpenAPI 3.1), generated from the schemas that validate requests.',
    responses: { 200: { description: 'OpenAPI document', schema: { type: 'object' } } },
    handler: async (ctx) => {
      document ??= openApiDocument(documented, publicBaseUrl);
      ctx.body = document;
    },
  });
  routes.push(openapi);
  return routes;
}
