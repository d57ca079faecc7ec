// Who may throw ScimError (a rule the lint cannot see): the SCIM edge only.
// That is the routes and scim.plugin.ts, and the modules that read a SCIM
// request document, whose refusals are SCIM's own wording of a bad request
// (the `scimType` keyword says which part of the document is wrong):
// scim.values.ts, scim.patch.ts, scim.user.patch.ts, scim.group.patch.ts,
// scim.user.state.ts, scim.group.state.ts (bodies and PATCH operations),
// scim.resource.ts (a path id), and the filter's parser, translation and
// comparisons (scim.filter.ts, scim.filter.where.ts, scim.compare.ts: an
// unknown attribute or a wrong type is as much `invalidFilter` as a syntax
// error, and no statement has run). Modules that read or write the database
// (scim.user.sql.ts, scim.group.sql.ts) throw domain errors instead: AppError,
// or ScimConflict (scim.conflict.ts) where SCIM tells two conflicts apart;
// scim.plugin.ts words them as SCIM errors.

/**
 * A SCIM refusal (RFC 7644 §3.12): `status` is the HTTP status, `scimType`
 * the error keyword some 400s carry (`invalidFilter`, `uniqueness`, ...),
 * and the message is the `detail` the client reads. SCIM clients expect the
 * SCIM error body, not the service's envelope, so these are kept apart from
 * AppError and get a handler of their own.
 */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: string | undefined,
    detail: string,
  ) {
    super(detail);
    this.name = 'ScimError';
  }

  get detail(): string {
    return this.message;
  }
}

/** A filter the server will not run (RFC 7644 §3.4.2.2: syntax, an unknown attribute, a wrong type, the limits). */
export const invalidFilter = (detail: string) => new ScimError(400, 'invalidFilter', detail);

/** How a piece of the client's input is named in a detail: quoted, and cut short so a detail never echoes a long input. */
export const shown = (text: string) => JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}...` : text);
