import type { Db, Tx } from '../db/database.js';

/**
 * The tenant list's name filter when few tenants match (docs/architecture.md,
 * "A tenant name few tenants hold"). Every name that contains the needle
 * contains each of its trigrams, so the holders of the needle's rarest
 * trigram (sys_tenant_name_gram, sql/013_tenant_name_grams.sql) are all the
 * list has to test. Which read is cheaper depends on how many tenants hold
 * that trigram; the answer is the same either way.
 */

/**
 * A trigram held by this many tenants or fewer is rare: testing its holders
 * (one probe of the list index each) costs less than walking every name.
 */
const RARE_GRAM_HOLDERS = 500;

/**
 * A trigram's count of holders is remembered this long. Counting them costs
 * a walk of up to RARE_GRAM_HOLDERS index entries per trigram, and a common
 * needle's trigrams ("Ten", "ant") are each that many: counted on every
 * request, they cost more than the walk the count saves. A count that is out
 * of date only chooses the slower read, never another answer.
 */
const HOLDERS_TTL_MS = 60_000;
/** Trigrams remembered per pool, the oldest forgotten first. */
const HOLDERS_KEPT = 10_000;

/**
 * A name's distinct trigrams as sql/013_tenant_name_grams.sql writes them:
 * three characters (code points, as PostgreSQL counts them in UTF-8), case as
 * written. A lone surrogate reaches the database as U+FFFD (postgres.js
 * writes UTF-8), so it is made that here too.
 */
export function gramsOf(name: string): string[] {
  const chars = Array.from(name.replace(/\p{Cs}/gu, '\uFFFD'));
  const grams = new Set<string>();
  for (let i = 0; i + 3 <= chars.length; i++) grams.add(chars.slice(i, i + 3).join(''));
  return [...grams];
}

interface Holders {
  holders: number;
  until: number;
}

/** Per pool (each test app has its own database): trigram -> holders, counted up to RARE_GRAM_HOLDERS + 1. */
const counted = new WeakMap<Db, Map<string, Holders>>();

/**
 * The needle's rarest trigram, if at most RARE_GRAM_HOLDERS tenants hold it;
 * undefined when the needle is shorter than three characters or every
 * trigram of it is common (then the list walks every name). The trigrams not
 * counted lately are counted first, in a statement of their own, so that the
 * page's statement can only be planned the one way: a planner that weighed a
 * trigram index against the walk by its estimates chose the index for common
 * needles too.
 */
export async function rareGramOf(sql: Db, needle: string): Promise<string | undefined> {
  const grams = gramsOf(needle);
  if (grams.length === 0) return undefined;
  let known = counted.get(sql);
  if (!known) counted.set(sql, (known = new Map()));
  const now = Date.now();
  const stale = grams.filter((g) => !((known.get(g)?.until ?? 0) > now));
  if (stale.length > 0) {
    const rows = await sql<{ gram: string; holders: number }[]>`
      SELECT g AS gram,
        (SELECT count(*)::int FROM (SELECT 1 FROM sys_tenant_name_gram n WHERE n.gram = g LIMIT ${RARE_GRAM_HOLDERS + 1}) held) AS holders
      FROM unnest(${stale}::text[]) g`;
    for (const { gram, holders } of rows) {
      known.delete(gram);
      known.set(gram, { holders, until: now + HOLDERS_TTL_MS });
    }
    for (const oldest of known.keys()) {
      if (known.size <= HOLDERS_KEPT) break;
      known.delete(oldest);
    }
  }
  let rarest: string | undefined;
  let fewest = RARE_GRAM_HOLDERS + 1;
  for (const g of grams) {
    const holders = known.get(g)?.holders ?? RARE_GRAM_HOLDERS + 1;
    if (holders < fewest) [rarest, fewest] = [g, holders];
  }
  return rarest;
}

/**
 * Rule: sys_tenant_name_gram holds exactly the trigrams of each tenant's
 * name (deleted tenants' too; the list's own filter leaves those out).
 * Called by a create and by a write that may change the name, in its
 * transaction (a trigger on sys_tenant did this until
 * sql/023_one_schema_for_citus.sql: a reference table under Citus has none). ON CONFLICT:
 * a database migrated only up to sql/022 still has the trigger that wrote them.
 */
export async function keepNameGrams(tx: Tx, id: string, name: string | null, replacing: boolean): Promise<void> {
  if (replacing) await tx`DELETE FROM sys_tenant_name_gram WHERE id = ${id}::bigint`;
  const grams = name === null ? [] : gramsOf(name);
  if (grams.length > 0)
    await tx`INSERT INTO sys_tenant_name_gram (gram, id) SELECT g, ${id}::bigint FROM unnest(${grams}::text[]) g ON CONFLICT DO NOTHING`;
}
