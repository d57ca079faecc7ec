import { Type, type Static } from '@sinclair/typebox';

// The shapes SCIM requests take (RFC 7644), checked before a handler runs.
// Resource bodies are open objects: SCIM lets a client send attributes a
// service does not keep, and scim.user.state.ts reads the ones it maps.

/**
 * `?filter=&startIndex=&count=&attributes=&excludedAttributes=` (RFC 7644 §3.4.2).
 * `filter` has no length bound here: the filter parser's own limit
 * (scim.filter.ts) refuses a longer one as SCIM says, 400 invalidFilter, and
 * the request line is bounded anyway (431 past 16 KiB).
 */
export const ListQuery = Type.Object({
  filter: Type.Optional(Type.String()),
  startIndex: Type.Optional(Type.Integer({ description: '1-based; below 1 means 1' })),
  count: Type.Optional(Type.Integer({ description: 'At most 200; negative means 0' })),
  attributes: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Array(Type.String({ maxLength: 2000 }), { maxItems: 50 })])),
  excludedAttributes: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Array(Type.String({ maxLength: 2000 }), { maxItems: 50 })])),
});
export type ListQuery = Static<typeof ListQuery>;

/** A resource id in a path: any text (an id that is not ours is a 404, scim.resource.ts scimId). */
export const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

/**
 * The id in the path of a PUT, PATCH or DELETE. These never bounded its
 * length: a longer one is a 404 there, as any id that is not ours, where a
 * GET answers 400.
 */
export const WriteIdParams = Type.Object({ id: Type.String() });

export const ResourceBody = Type.Object({}, { additionalProperties: true });

export const PatchBody = Type.Object(
  {
    schemas: Type.Optional(Type.Array(Type.String())),
    Operations: Type.Array(
      Type.Object(
        { op: Type.String(), path: Type.Optional(Type.String({ maxLength: 2000 })), value: Type.Optional(Type.Unknown()) },
        { additionalProperties: true },
      ),
      { minItems: 1, maxItems: 1000 },
    ),
  },
  { additionalProperties: true },
);
