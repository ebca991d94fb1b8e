import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import t from 'tap';
import pg from 'pg';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish, send } from '../helpers/app.js';
import { privateCluster, privateClusterUnavailable } from '../helpers/private-postgres.js';
import { startReceiver } from '../helpers/receiver.js';
import { onlyOn } from '../helpers/stores.js';

// An erased lead leaves its bytes in no file the store keeps, not only in no table: the test reads
// the files. SQLite: the database and its WAL (secure_delete, then a checkpoint that empties the
// WAL: src/store/sqlite/truncate-wal.ts). PostgreSQL: every relation file of the database, after a
// CHECKPOINT, on a cluster of the test's own with autovacuum off (the erasure vacuums the tables
// it changed: src/store/erasure/postgres-vacuum.ts). What stays in PostgreSQL's WAL and backups is
// in docs/operations.md.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const EMAIL = 'erased-bytes-5d1c@example.test';
/** A lead's note too large for one page (SQLite's overflow pages, PostgreSQL's TOAST), not compressible. */
const NOTE = `${randomBytes(6000).toString('hex')} ${EMAIL}`;

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];
type Db = Awaited<ReturnType<typeof buildTestApp>>['db'];

/** Publishes the lead (delivered to one receiver, redirected by another), erases it, and more. */
async function publishAndErase(t: Parameters<typeof buildTestApp>[0], app: App, db: Db) {
  const acme = await createClient(app);
  const ok = await startReceiver(t);
  // A redirect whose Location quotes the lead: kept in the attempt's error, which the erasure erases.
  const redirecting = await startReceiver(t, (_n, r) => ({ status: 302, headers: { location: r.body.includes(EMAIL) ? `https://crm.example/?email=${EMAIL}` : 'https://crm.example/' } }));
  for (const url of [ok.url, redirecting.url]) await createWebhook(app, acme.apiKey, { url, events: ['lead_create', 'lead_update'] });
  const lead = { name: 'Ada Lovelace', email: EMAIL, note: NOTE };
  t.equal((await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 981, data: lead })).status, 202);
  t.equal((await publish(app, { clientId: acme.clientId, type: 'lead_update', leadId: 981, data: { ...lead, stage: 'won' } })).status, 202);
  await noDeliveryPending(db);
  // Other leads' work after it, and some while the lead is erased.
  for (let i = 0; i < 20; i++) await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 1000 + i, data: { i } });
  const erased = await send(app, { method: 'POST', url: '/admin/erasures', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { leadId: 981 } });
  t.match([erased.status, erased.json], [200, { events: 2, attempts: Number }]);
  await noDeliveryPending(db);
}

/** The files among `paths` (and their segments `path.1`, ...) that hold the email's bytes. */
function filesHolding(paths: string[]): string[] {
  const needle = Buffer.from(EMAIL);
  return paths
    .flatMap((path) => [path, ...readdirSync(dirname(path)).filter((name) => name.startsWith(`${basename(path)}.`)).map((name) => join(dirname(path), name))])
    .filter((path) => existsSync(path) && readFileSync(path).includes(needle));
}

t.test('SQLite: the erased lead is in neither the database file nor its WAL', onlyOn('sqlite'), async (t) => {
  const { app, db, databasePath } = await buildTestApp(t, { ...DELIVERY_ENV, ADMIN_TOKEN });
  const files = [databasePath, `${databasePath}-wal`];
  await publishAndErase(t, app, db);
  t.same(filesHolding(files), [], 'no file holds the email');
  t.ok(files.some((file) => existsSync(file) && readFileSync(file).includes(Buffer.from('"i":19'))), 'the other leads are there');
});

t.test('PostgreSQL: the erased lead is in no relation file after a checkpoint, autovacuum off', { ...onlyOn('postgres'), skip: onlyOn('postgres').skip || privateClusterUnavailable() }, async (t) => {
  const cluster = await privateCluster(t);
  cluster.start(['autovacuum=off']);
  cluster.createDatabase('leadhooks');
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, ADMIN_TOKEN, DATABASE_URL: cluster.url('leadhooks') });
  await publishAndErase(t, app, db);
  const client = new pg.Client({ connectionString: cluster.url('leadhooks') });
  await client.connect();
  t.teardown(() => client.end());
  await client.query('CHECKPOINT');
  const { rows } = await client.query<{ name: string; path: string }>(
    "SELECT relname AS name, pg_relation_filepath(oid) AS path FROM pg_class WHERE relkind IN ('r', 't', 'i', 'm') AND pg_relation_filepath(oid) IS NOT NULL",
  );
  const names = new Map(rows.map((row) => [join(cluster.dataDir, row.path), row.name]));
  t.ok([...names.keys()].some((file) => file.includes('/base/')), 'the database files are read');
  t.same(
    filesHolding([...names.keys()]).map((file) => names.get(file) ?? file),
    [],
    'no relation file holds the email',
  );
  const [events] = (await client.query<{ n: string }>("SELECT count(*) AS n FROM events WHERE payload LIKE '%\"i\":19%'")).rows;
  t.equal(Number(events!.n), 1, 'the other leads are there');
});
