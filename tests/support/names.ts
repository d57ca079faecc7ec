let seq = 0;

/** A name no other test (or earlier run on a shared server) uses. */
export const uniq = (prefix = 'T') => `${prefix}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
