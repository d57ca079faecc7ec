import { Type, type Static } from '@sinclair/typebox';
import { ScimError, shown } from './scim.error.js';
import { scimBaseUrl, sendScim } from './scim.reply.js';
import { listResponse } from './scim.resource.js';
import { byId, resourceTypes, schemas, serviceProviderConfig } from './scim.discovery.js';
import { routesPlugin } from '../http/routes.plugin.js';

// /scim/v2/ServiceProviderConfig, /ResourceTypes and /Schemas
// (docs/scim.md#discovery): what the service supports, for a provider to read
// before it provisions. The documents are built in scim.discovery.ts; these
// routes only answer them. Who may call is the plugin's rule for every SCIM
// route (an admin API key); the documents name no tenant data, so no
// permission beyond that is asked.

/** The lists read `filter` only to refuse it; other parameters (`attributes`, paging) are passed over: the lists are short and whole. */
const DiscoveryQuery = Type.Object({ filter: Type.Optional(Type.String()) }, { additionalProperties: true });

/**
 * RFC 7644 §4: a filter on a discovery endpoint SHOULD be refused with 403, so
 * that a client never takes the unfiltered answer for a filtered one.
 */
function refuseFilter(query: Static<typeof DiscoveryQuery>): void {
  if (query.filter !== undefined) {
    throw new ScimError(403, undefined, 'The discovery endpoints take no filter');
  }
}

export const scimDiscoveryRoutes = routesPlugin<{ publicUrl?: string | undefined }>('scim-discovery-routes', async (app, { publicUrl }) => {
  const base = scimBaseUrl(publicUrl);
  const params = Type.Object({ id: Type.String() });

  app.get('/ServiceProviderConfig', { schema: { querystring: DiscoveryQuery } }, async (request, reply) => {
    refuseFilter(request.query);
    return sendScim(reply, 200, serviceProviderConfig(base(request)));
  });

  app.get('/ResourceTypes', { schema: { querystring: DiscoveryQuery } }, async (request, reply) => {
    refuseFilter(request.query);
    const all = resourceTypes(base(request));
    return sendScim(reply, 200, listResponse(all.length, 1, all));
  });

  app.get('/ResourceTypes/:id', { schema: { params } }, async (request, reply) => {
    const { id } = request.params;
    const found = byId(resourceTypes(base(request)), id);
    if (!found) throw new ScimError(404, undefined, `ResourceType ${shown(id)} not found: there are User and Group`);
    return sendScim(reply, 200, found);
  });

  app.get('/Schemas', { schema: { querystring: DiscoveryQuery } }, async (request, reply) => {
    refuseFilter(request.query);
    const all = schemas(base(request));
    return sendScim(reply, 200, listResponse(all.length, 1, all));
  });

  app.get('/Schemas/:id', { schema: { params } }, async (request, reply) => {
    const { id } = request.params;
    const found = byId(schemas(base(request)), id);
    if (!found) throw new ScimError(404, undefined, `Schema ${shown(id)} not found`);
    return sendScim(reply, 200, found);
  });
});
