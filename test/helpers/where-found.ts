import type { TestDatabase } from './stores.js';

/** Every table of the database, from its own catalogue, so that a table added later is read too. */
export async function tables(db: TestDatabase): Promise<string[]> {
  const rows =
    db.kind === 'sqlite'
      ? await db.query<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      : await db.query<{ name: string }>(
          "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
        );
  return rows.map((row) => row.name);
}

/** `table: n` for each table of the database with rows that hold `text` in any column. */
export async function whereFound(db: TestDatabase, text: string): Promise<string[]> {
  const found: string[] = [];
  for (const table of await tables(db)) {
    const rows = await db.query<Record<string, unknown>>(`SELECT * FROM "${table}"`);
    const n = rows.filter((row) => JSON.stringify(row).includes(text)).length;
    if (n > 0) found.push(`${table}: ${n}`);
  }
  return found;
}
