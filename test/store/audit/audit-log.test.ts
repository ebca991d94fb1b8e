import t from 'tap';
import pino from 'pino';
import { createPruner } from '../../../src/retention/pruner.js';
import type { AuditNote } from '../../../src/store/store.js';
import { openTestStore } from '../../helpers/stores.js';

// The audit log's repository on each store (src/store/audit/): entries written with the writes
// that make the changes, or alone by `record`; read newest first by client, time and cursor; pruned
// by age. What the API makes of it is test/handlers/audit-log.test.ts.

const admin: AuditNote['context'] = { actor: { kind: 'admin' }, ip: '198.51.100.20' };
const key = (prefix: string) => ({ prefix, hash: `hash-of-${prefix}` });

t.test('a write records its note with what it made, and a write that changes nothing records nothing', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme', key('lh_first000'), { context: admin, action: 'account.created', changes: { name: 'Acme' } });
  const hook = await store.webhooks.create({ clientId: client.id, url: 'https://a.example/h', events: ['lead_create'], secret: 's' }, 1, {
    context: admin,
    action: 'webhook.created',
  });
  // Refused or finding nothing: no entry.
  const note = (action: AuditNote['action']): AuditNote => ({ context: admin, action });
  t.equal(await store.webhooks.create({ clientId: client.id, url: 'https://a.example/2', events: ['lead_create'], secret: 's' }, 1, note('webhook.created')), undefined, 'at the cap');
  t.equal(await store.keys.create(999, key('lh_nobody00'), note('key.created')), undefined, 'no such client');
  t.equal(await store.webhooks.update(client.id, 999, { paused: true }, note('webhook.updated')), undefined);
  t.equal(await store.webhooks.delete(client.id, 999, note('webhook.detached')), false);
  t.equal(await store.secrets.rotate(client.id, 999, 's2', new Date().toISOString(), note('webhook.secret_rotated')), false);
  t.equal(await store.keys.revoke('lh_nobody00', note('key.revoked')), undefined);
  t.ok(await store.webhooks.enable(client.id, hook!.id, note('webhook.enabled')), 'enabling a webhook that is not disabled');
  t.equal(await store.clients.update(999, { name: 'x' }, note('account.updated')), undefined);
  // Without a note, nothing either (fixtures, internal writes).
  await store.keys.create(client.id, key('lh_unnoted0'));

  const rows = await db.query<{ action: string; client_id: number; target_id: number; changes: string }>('SELECT action, client_id, target_id, changes FROM audit_log ORDER BY id');
  const [firstKey] = await store.keys.list(client.id);
  t.same(rows, [
    { action: 'account.created', client_id: client.id, target_id: client.id, changes: JSON.stringify({ name: 'Acme', keyId: firstKey!.id, prefix: 'lh_first000' }) },
    { action: 'webhook.created', client_id: client.id, target_id: hook!.id, changes: '{}' },
  ]);
});

t.test('record, the one-line way to put a change on record, and list by client, time and cursor', async (t) => {
  const { store } = await openTestStore(t);
  const at = (n: number) => new Date(Date.now() - (10 - n) * 60_000).toISOString();
  const made = [];
  for (let i = 0; i < 6; i++) {
    made.push(await store.audit.record({ context: { actor: { kind: 'cli' }, ip: null }, action: 'account.updated', changes: { i } }, { clientId: (i % 2) + 1, targetId: (i % 2) + 1 }));
  }
  t.match(made[0], { actor: { kind: 'cli' }, ip: null, action: 'account.updated', clientId: 1, targetId: 1, changes: { i: 0 } });
  const all = await store.audit.list({ limit: 10 });
  t.same(all.map((e) => e.changes.i), [5, 4, 3, 2, 1, 0], 'newest first');
  t.same((await store.audit.list({ limit: 2, before: all[1]!.id })).map((e) => e.changes.i), [3, 2], 'before a cursor');
  t.same((await store.audit.list({ limit: 10, clientId: 2 })).map((e) => e.changes.i), [5, 3, 1], "one client's");
  t.same(await store.audit.list({ limit: 10, since: at(11) }), [], 'none written after now');
  t.same((await store.audit.list({ limit: 10, until: at(11), clientId: 1, before: all[3]!.id })).map((e) => e.changes.i), [0]);
});

t.test('retention deletes the entries written before its cut-off, and counts them', async (t) => {
  const { store, db } = await openTestStore(t);
  for (let i = 0; i < 5; i++) await store.audit.record({ context: { actor: { kind: 'admin' }, ip: '192.0.2.1' }, action: 'account.updated' }, { clientId: 1, targetId: 1 });
  const ids = (await db.query<{ id: number }>('SELECT id FROM audit_log ORDER BY id')).map((row) => row.id);
  const old = new Date(Date.now() - 2 * 86_400_000).toISOString();
  for (const id of ids.slice(0, 3)) await db.query('UPDATE audit_log SET at = ? WHERE id = ?', [old, id]);
  const pruner = createPruner(store, { retention: 86_400_000, pruneInterval: 3_600_000 }, pino({ level: 'silent' }));
  t.equal((await pruner.runOnce()).auditEntries, 3);
  t.same((await store.audit.list({ limit: 10 })).map((e) => e.id), ids.slice(3).reverse());
  t.equal((await pruner.runOnce()).auditEntries, 0, 'once');
});

t.test('a change whose entry cannot be written is not made: they share one transaction', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client, key: first } = await store.clients.create('Acme', key('lh_first000'));
  const hook = (await store.webhooks.create({ clientId: client.id, url: 'https://a.example/h', events: ['lead_create'], secret: 's' }, 10))!;
  // The log out of reach: every write that records itself fails, and leaves nothing behind.
  await db.query('ALTER TABLE audit_log RENAME TO audit_log_away');
  const note = (action: AuditNote['action']): AuditNote => ({ context: admin, action });
  await t.rejects(store.webhooks.create({ clientId: client.id, url: 'https://a.example/2', events: ['lead_create'], secret: 's' }, 10, note('webhook.created')));
  await t.rejects(store.webhooks.update(client.id, hook.id, { paused: true }, note('webhook.updated')));
  await t.rejects(store.webhooks.delete(client.id, hook.id, note('webhook.detached')));
  await t.rejects(store.secrets.rotate(client.id, hook.id, 's2', new Date().toISOString(), note('webhook.secret_rotated')));
  await t.rejects(store.clients.update(client.id, { name: 'Renamed' }, note('account.updated')));
  await t.rejects(store.keys.create(client.id, key('lh_second00'), note('key.created')));
  await t.rejects(store.keys.revoke(String(first.id), note('key.revoked')));
  await t.rejects(store.clients.create('Bolt', key('lh_bolt0000'), note('account.created')));
  t.same(await db.query('SELECT id, paused, secret, deleted_at FROM webhooks'), [{ id: hook.id, paused: db.kind === 'sqlite' ? 0 : false, secret: 's', deleted_at: null }], 'the webhook as it was, and no other');
  t.same(await db.query('SELECT name FROM clients'), [{ name: 'Acme' }]);
  t.same((await store.keys.list()).map((k) => [k.prefix, k.revokedAt]), [['lh_first000', null]]);
  t.ok(await store.webhooks.update(client.id, hook.id, { paused: true }), 'a write without a note still works');
});
