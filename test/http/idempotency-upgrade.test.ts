import { readFileSync } from 'node:fs';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';

// An Idempotency-Key used before an upgrade is honoured after it: the fingerprint a release kept
// for a request still matches the same request on today's code (src/http/request-fingerprint.ts).
// test/http/fixtures/idempotency-fingerprints.json holds fingerprints each release computed with
// its own code; each is put in a key's row as that release wrote it, and the same request sent
// again with the key must get the kept answer, not 422.

interface Fixture {
  release: string;
  operationId: string;
  method: 'POST';
  url: string;
  auth: 'apiKey' | 'publisher' | 'admin';
  body?: unknown;
  fingerprint: string;
}

const { fingerprints } = JSON.parse(readFileSync(new URL('fixtures/idempotency-fingerprints.json', import.meta.url), 'utf8')) as { fingerprints: Fixture[] };
const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

t.test('every release whose fingerprints are kept is in the fixtures, with every keyed operation', async (t) => {
  const releases = new Set(fingerprints.map((f) => f.release));
  t.same([...releases], ['5b6e822', '1881014', 'request-fingerprint.ts']);
  const operations = (release: string) => new Set(fingerprints.filter((f) => f.release === release).map((f) => f.operationId));
  t.same([...operations('1881014')].sort(), ['createAccount', 'createWebhook', 'publishEvent', 'publishEvents', 'rotateWebhookSecret']);
});

t.test("a key kept by an earlier release gets the same request the kept answer, on today's code", async (t) => {
  const { app, db } = await buildTestApp(t, { ADMIN_TOKEN, PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN });
  // The fixtures were made where client 1 and its webhook 1 exist.
  const acme = await createClient(app, 'Setup');
  t.equal(acme.clientId, 1);
  t.equal((await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/setup', events: ['lead_create'] })).json.hookId, 1);
  const credentials: Record<Fixture['auth'], Record<string, string>> = {
    apiKey: { 'x-api-key': acme.apiKey },
    publisher: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` },
    admin: { authorization: `Bearer ${ADMIN_TOKEN}` },
  };
  const request = (fixture: Fixture, key: string) =>
    send(app, {
      method: fixture.method,
      url: fixture.url,
      headers: { ...credentials[fixture.auth], 'idempotency-key': key },
      ...(fixture.body === undefined ? {} : { payload: fixture.body as object }),
    });

  let n = 0;
  for (const fixture of fingerprints) {
    const key = `upgrade-${++n}`;
    const what = `${fixture.release} ${fixture.operationId} ${JSON.stringify(fixture.body) ?? '(no body)'}`;
    const first = await request(fixture, key);
    t.ok(first.status < 300, `${what}: made (${first.status})`);
    // The key's row as that release wrote it: its fingerprint for this request.
    await db.query('UPDATE idempotency_keys SET request_hash = ? WHERE idempotency_key = ?', [fixture.fingerprint, key]);
    const again = await request(fixture, key);
    t.same([again.status, again.headers['idempotent-replayed'], again.json], [first.status, 'true', first.json], `${what}: the kept answer`);
    // Another fingerprint is another request: the same key is refused, as before.
    await db.query('UPDATE idempotency_keys SET request_hash = ? WHERE idempotency_key = ?', ['0'.repeat(64), key]);
    const other = await request(fixture, key);
    t.same([other.status, other.json], [422, { error: 'Idempotency-Key already used for a different request' }], `${what}: another fingerprint is refused`);
  }
});
