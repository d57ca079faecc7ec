import postgres from 'postgres';
import { openEmbedded, type Sql } from '../../src/db/database.js';
import type { ServiceDatabase } from './service.js';

/**
 * Reads the database a spawned service or command writes: on PostgreSQL
 * through a connection of its own, on the embedded database by opening its
 * DATA_DIR (so only while no service holds it).
 */
export async function inspectTarget<T>(db: ServiceDatabase, read: (sql: Sql) => Promise<T>): Promise<T> {
  if (db.kind === 'postgresql') {
    const sql = postgres(db.directUrl!, { max: 1, onnotice: () => {} });
    try {
      return await read(sql as unknown as Sql);
    } finally {
      await sql.end({ timeout: 5 });
    }
  }
  const embedded = await openEmbedded(db.env.DATA_DIR);
  try {
    return await read(embedded.sql);
  } finally {
    await embedded.close();
  }
}
