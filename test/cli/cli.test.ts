import { join } from 'node:path';
import t from 'tap';
import { hashApiKey } from '../../src/secrets/credentials.js';
import { runCli } from '../../src/cli/run-cli.js';
import { tempDir } from '../helpers/app.js';
import { sqliteDatabase, storeKind, testDatabase } from '../helpers/stores.js';

function cli(env: Record<string, string>) {
  return async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, {
      env,
      out: (line) => out.push(line),
      err: (line) => err.push(line),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
}

t.test('client create --json creates the database on first use and shows the key once', async (t) => {
  // A SQLite file is created with its folders; a PostgreSQL database gets its tables.
  const db = storeKind() === 'sqlite' ? sqliteDatabase(join(tempDir(t), 'nested', 'dir', 'leadhooks.db')) : await testDatabase(t, { empty: true });
  const run = cli(db.env);
  const res = await run('client', 'create', 'Acme Realty', '--json');
  t.equal(res.code, 0);
  const created = JSON.parse(res.out);
  t.same(Object.keys(created), ['clientId', 'name', 'apiKey']);
  t.equal(created.clientId, 1);
  t.equal(created.name, 'Acme Realty');
  t.match(created.apiKey, /^lh_[A-Za-z0-9_-]{43}$/);

  const rows = await db.query('SELECT client_id, prefix, key_hash, revoked_at FROM api_keys');
  t.same(rows, [{ client_id: 1, prefix: created.apiKey.slice(0, 11), key_hash: hashApiKey(created.apiKey), revoked_at: null }]);
  const dump = JSON.stringify(await db.query('SELECT * FROM api_keys'));
  t.notMatch(dump, created.apiKey, 'the key itself is not stored, only its SHA-256');

  const list = await run('client', 'list', '--json');
  t.equal(list.code, 0);
  const { clients } = JSON.parse(list.out);
  t.equal(clients.length, 1);
  t.match(clients[0], { id: 1, name: 'Acme Realty', activeKeys: 1, activeWebhooks: 0 });
  t.notMatch(list.out, created.apiKey, 'listing never shows a key');
});

t.test('key create, key list and key revoke (by prefix and by id)', async (t) => {
  const run = cli((await testDatabase(t)).env);
  const { apiKey: first } = JSON.parse((await run('client', 'create', 'Acme', '--json')).out);

  const created = await run('key', 'create', '1', '--json');
  t.equal(created.code, 0);
  const second = JSON.parse(created.out);
  t.match(second, { apiKey: /^lh_/, keyId: 2, prefix: second.apiKey.slice(0, 11), clientId: 1 });
  t.not(second.apiKey, first);

  const listed = JSON.parse((await run('key', 'list', '1', '--json')).out);
  t.same(listed.keys.map((k: { id: number; prefix: string }) => [k.id, k.prefix]), [
    [1, first.slice(0, 11)],
    [2, second.prefix],
  ]);
  t.notMatch(JSON.stringify(listed), first);

  const byPrefix = await run('key', 'revoke', first.slice(0, 11), '--json');
  t.equal(byPrefix.code, 0);
  t.match(JSON.parse(byPrefix.out), { revoked: { id: 1, clientId: 1, revokedAt: String } });

  const again = await run('key', 'revoke', first.slice(0, 11));
  t.equal(again.code, 1, 'an already revoked key is not found');
  t.match(again.err, /no active key matches/);

  const byId = await run('key', 'revoke', '2');
  t.equal(byId.code, 0);
  t.match(byId.out, /Revoked key 2/);
});

t.test('usage errors exit 2 with a message; unknown clients exit 1', async (t) => {
  const run = cli((await testDatabase(t)).env);
  t.equal((await run()).code, 2);
  t.equal((await run('frobnicate')).code, 2);
  t.equal((await run('client', 'create')).code, 2);
  t.equal((await run('key', 'create', 'abc')).code, 2);
  t.equal((await run('client', 'list', '--colour')).code, 2, 'an unknown option is refused');
  const help = await run('--help');
  t.equal(help.code, 0);
  t.match(help.out, /client create <name>/);
  const missing = await run('key', 'create', '99', '--json');
  t.equal(missing.code, 1);
  t.same(JSON.parse(missing.err), { error: 'no client 99' });
});

t.test('event emit publishes to the subscribed webhooks', async (t) => {
  const db = await testDatabase(t);
  const run = cli(db.env);
  await run('client', 'create', 'Acme', '--json');
  await db.query(
    'INSERT INTO webhooks (client_id, url, events, secret, created_at) VALUES (1, ?, ?, ?, ?)',
    ['https://a.example/h', db.kind === 'sqlite' ? '["lead_update"]' : ['lead_update'], 'whsec_x', '2026-01-01T00:00:00Z'],
  );

  const res = await run('event', 'emit', '1', 'lead_update', '--data', '{"id":7,"name":"Jane"}', '--json');
  t.equal(res.code, 0);
  const accepted = JSON.parse(res.out);
  t.match(accepted, { eventId: /^evt_/, deliveries: 1 });
  const [row] = await db.query<{ payload: string }>('SELECT payload FROM events WHERE id = ?', [accepted.eventId]);
  t.match(JSON.parse(row!.payload), { type: 'lead_update', data: { id: 7, name: 'Jane' } });
  t.same(await db.query('SELECT state FROM deliveries'), [{ state: 'pending' }]);

  const text = await run('event', 'emit', '1', 'lead_create', '--data', '{}');
  t.match(text.out, /^Published lead_create event evt_[0-9a-f]+ to 0 webhook\(s\)\.$/);

  t.equal((await run('event', 'emit', '1', 'lead_delete', '--data', '{}')).code, 2, 'unknown type');
  t.equal((await run('event', 'emit', '1', 'lead_create', '--data', '[1]')).code, 2, 'data not an object');
  t.equal((await run('event', 'emit', '1', 'lead_create', '--data', '{oops')).code, 2, 'data not JSON');
  t.equal((await run('event', 'emit', '1', 'lead_create')).code, 2, 'no data');
  const deep = (levels: number) => `{"lead":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
  const tooDeep = await run('event', 'emit', '1', 'lead_create', '--data', deep(65));
  t.same([tooDeep.code, tooDeep.err], [2, 'leadhooks: --data may nest objects and arrays at most 64 levels deep'], 'data nested past the API\'s limit');
  t.equal((await run('event', 'emit', '1', 'lead_create', '--data', deep(64))).code, 0, '64 levels, as the API takes');
  t.equal((await run('event', 'emit', '9', 'lead_create', '--data', '{}')).code, 1, 'unknown client');
});

t.test('key list and client list print readable text', async (t) => {
  const run = cli((await testDatabase(t)).env);
  t.equal((await run('client', 'list')).out, 'No clients yet: create one with `leadhooks client create <name>`.');
  t.equal((await run('key', 'list')).out, 'No keys.');
  const { apiKey } = JSON.parse((await run('client', 'create', 'Acme', '--json')).out);
  t.match((await run('client', 'list')).out, /^1\tAcme\tkeys: 1\twebhooks: 0\tcreated \d{4}-/);
  t.match((await run('key', 'list')).out, new RegExp(`^1\\t${apiKey.slice(0, 11)}\\tclient 1\\tcreated \\S+\\tactive$`));
});
