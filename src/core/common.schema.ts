import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { MAX_BATCH_IDS, MAX_PATH_PARAM } from './limits.js';

/**
 * A $ref to a shared schema (registered with app.addSchema), typed as that
 * schema: the document then names it (Dept, TenantCreate, ...) instead of
 * repeating it inline.
 */
export const RefTo = <T extends TSchema>(schema: T) => Type.Unsafe<Static<T>>(Type.Ref(schema.$id!));

/** A field that may be sent or returned as null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const Status = Type.Union([Type.Literal('0'), Type.Literal('1')], {
  description: '"0" normal, "1" disabled',
});

/** Server-managed deletion flag: a body may only repeat "0". */
export const DelFlagInput = Type.Literal('0', { description: 'Server-managed; only "0" is accepted in a body' });
export const DelFlag = Type.Union([Type.Literal('0'), Type.Literal('2')], { description: '"0" exists, "2" deleted' });

/** Timestamps are `YYYY-MM-DD HH:mm:ss` in the server's time zone. */
export const DateTime = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$' });

export const Audit = Type.Object({
  createBy: Type.String(),
  createTime: DateTime,
  updateBy: Type.String(),
  updateTime: Nullable(DateTime),
});

/**
 * A tenant's code, six digits, as the source of a regular expression (no
 * anchors): the one definition, for TenantCode and for the ids that carry a
 * tenant's code inside them (an SSO connection's `<tenantId>-<n>`, an API
 * key, a sign-in's one-time code).
 */
export const TENANT_CODE = '[0-9]{6}';

/** A tenant's code (`tenantId`, `tenantParent`) in a path, query or body, described as where it is used. */
export const TenantCode = (description = 'Six-digit business code') => Type.String({ pattern: `^${TENANT_CODE}$`, description });

/**
 * A department or user id (docs/api-rules.md#ids): 64-bit. In JSON an id up
 * to 2^53-1 is a number and a larger one (a snowflake brought in from
 * RuoYi-Vue-Plus) a decimal string, which JSON numbers cannot carry exactly;
 * requests may send either form, and core/ids.ts canonicalId makes the one form.
 */
const idOf = (minimum: 0 | 1, options: { description?: string } = {}) =>
  Type.Union(
    [
      Type.Integer({ minimum, maximum: Number.MAX_SAFE_INTEGER }),
      Type.String({ pattern: minimum === 0 ? '^(0|[1-9][0-9]{0,18})$' : '^[1-9][0-9]{0,18}$' }),
    ],
    options,
  );
export const EntityId = (description?: string) => idOf(1, description === undefined ? {} : { description });
/** A parent's id: an EntityId, or 0 for none (a top-level department). */
export const ParentId = (description: string) => idOf(0, { description });
/** An id in a query string: text on the wire, so the string form first (Ajv would coerce it into the number form and lose digits). */
export const EntityIdQuery = (minimum: 0 | 1 = 1) =>
  Type.Union([
    Type.String({ pattern: minimum === 0 ? '^(0|[1-9][0-9]{0,18})$' : '^[1-9][0-9]{0,18}$' }),
    Type.Integer({ minimum, maximum: Number.MAX_SAFE_INTEGER }),
  ]);

/** Path ids are decimal integers of at most 19 digits (docs/api-rules.md#limits), checked again against int8 in code. */
export const IdParam = Type.Object({
  id: Type.String({ pattern: '^[0-9]{1,19}$', description: 'Positive decimal id' }),
});

export const IdsParam = Type.Object({
  ids: Type.String({
    pattern: '^[0-9]{1,19}(,[0-9]{1,19})*$',
    maxLength: MAX_PATH_PARAM,
    description: `One id or up to ${MAX_BATCH_IDS} comma-separated ids`,
  }),
});

/** pageNum and pageSize of every paged list; pageNum is capped so the offset stays in range. */
export const PageParams = {
  pageNum: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
  pageSize: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
};

/** `{total, rows}`: one page of `row`s and how many there are in all. */
export const PageOf = (row: TSchema, options: { $id?: string } = {}) => Type.Object({ total: Type.Integer(), rows: Type.Array(row) }, options);

/**
 * `{total, totalExact, rows}`: a page of a list that may hold millions of
 * rows, whose counting stops (db/page.ts keyedPageOf). `total` is exact
 * while `totalExact` is true; otherwise it is a lower bound, and the rows go
 * on past it.
 */
export const BoundedPageOf = (row: TSchema, options: { $id?: string } = {}) =>
  Type.Object(
    {
      total: Type.Integer({ description: 'How many rows match; a lower bound when totalExact is false' }),
      totalExact: Type.Boolean({
        description: 'False when counting stopped at 1,000 rows, or at the end of the page asked for if that is further: more rows match than total',
      }),
      rows: Type.Array(row),
    },
    options,
  );

export const Phone = Type.String({ maxLength: 20, pattern: '^[0-9 +-]*$', description: 'Digits, spaces, + and -' });
/** A calendar day; `format: date` refuses one that does not exist (2025-02-30). */
export const Day = Type.String({ format: 'date', pattern: '^(?!0000)\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD, year 0001 or later' });

export const Email = Type.String({ maxLength: 50, format: 'email' });
