/** A PostgreSQL error as postgres.js throws it: the SQLSTATE and, for a constraint's, its name. */
export interface PgError {
  code: string;
  message: string;
  constraint_name?: string;
}

export function isPgError(error: unknown): error is PgError {
  return error instanceof Error && error.name === 'PostgresError';
}

/**
 * The constraint's name as sql/*.sql gives it. On Citus the coordinator
 * passes a worker's error on with its message alone (no constraint field),
 * naming the shard's index or constraint, which carries the shard's number
 * after the name (`violates unique constraint "sys_user_name_live_key_102008"`).
 */
export function constraintOf(error: PgError): string | undefined {
  if (error.constraint_name !== undefined) return error.constraint_name;
  const named = /constraint "([^"]+)_\d+"/.exec(error.message);
  return named?.[1];
}

/** Rule backstops by name: true when `error` is the unique violation of exactly `constraint` (sql/*.sql), nothing else. */
export function violatesUnique(error: unknown, constraint: string): boolean {
  return isPgError(error) && error.code === '23505' && constraintOf(error) === constraint;
}
