// Limits that several places must agree on (docs/api-rules.md: departments, users, tenants, limits; docs/security.md; and the
// columns behind them), defined once: schemas, checks, server options and
// messages all read them from here.

/**
 * A department's name and a user's display name (varchar(100) columns since
 * sql/019_long_names.sql): identity providers send directory group and
 * display names longer than RuoYi's 30 characters.
 */
export const DEPT_NAME_MAX = 100;
export const NICK_NAME_MAX = 100;
/** A tenant's contact person (contactUserName), RuoYi's 30 characters. */
export const CONTACT_NAME_MAX = 30;
/** A user's login name and email: identity providers send addresses as login names, longer than RuoYi's 30 and 50. */
export const USER_NAME_MAX = 100;
export const EMAIL_MAX = 254;

/** Integer fields stored as int4: orderNum, the quotas, accountCount. */
export const INT4_MAX = 2_147_483_647;
/** Ids stored as int8 (a tenant's internal id, a package id, list cursors): a larger one names no row. */
export const INT8_MAX = 9_223_372_036_854_775_807n;

/** Largest request body (docs/api-rules.md#limits), and how messages name it. */
export const BODY_LIMIT_BYTES = 1024 * 1024;
export const BODY_LIMIT_TEXT = '1 MiB';

/** Ids in one batch-delete path (docs/api-rules.md#limits). */
export const MAX_BATCH_IDS = 1000;

/** Longest path parameter: MAX_BATCH_IDS ids of up to 19 digits, with their commas. */
export const MAX_PATH_PARAM = MAX_BATCH_IDS * 20;

/** Token lifetime in seconds when TOKEN_TTL is unset (docs/security.md#sign-in-and-sessions). */
export const DEFAULT_TOKEN_TTL = 7200;
