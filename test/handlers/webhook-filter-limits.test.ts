import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';

// What a client's filters may hold together (openapi.yaml, LeadFilter's `maxClientBytes`): every
// publication runs them all, so their total is bounded whatever the number of webhooks. A filter
// that would bring them past it is refused, at creation and at a change, and nothing is stored.

const MAX_CLIENT_BYTES = 131072;
const REFUSAL = { error: `Invalid data: filter would bring the client's filters past ${MAX_CLIENT_BYTES} bytes of JSON together` };

/** A filter of exactly `bytes` bytes of JSON: an `$in` of 300 numbers, or a note padded to size. */
function filterOf(bytes: number, seed: number) {
  const filter = (note: string) => ({ $or: [{ tags: { $in: Array.from({ length: 300 }, (_, i) => seed * 1000 + i) } }, { note }] });
  return filter('x'.repeat(bytes - Buffer.byteLength(JSON.stringify(filter('')))));
}

t.test("a client's filters together hold at most maxClientBytes: past it, 400 and nothing stored", async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const other = await createClient(app);
  const hooks: number[] = [];
  // 32 filters of 4096 bytes (the most one may hold) make 131072 bytes.
  for (let i = 0; i < 32; i++) {
    const res = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'], filter: filterOf(4096, i) });
    t.equal(res.status, 201, `filter ${i}`);
    hooks.push(res.json.hookId as number);
  }
  const over = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'], filter: { campaign: 'spring' } });
  t.same([over.status, over.json], [400, REFUSAL]);
  const count = async () => ((await db.query<{ n: number }>('SELECT count(*) AS n FROM webhooks WHERE client_id = ?', [acme.clientId]))[0]!.n);
  t.equal(await count(), 32, 'nothing stored');
  const plain = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  t.equal(plain.status, 201, 'a webhook without a filter adds nothing');
  t.equal((await createWebhook(app, other.apiKey, { url: 'https://a.example/h', events: ['lead_create'], filter: filterOf(4096, 1) })).status, 201, "another client's filters are its own");

  const patch = (id: number, body: unknown) =>
    send(app, { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': acme.apiKey }, payload: body as object });
  const grown = await patch(plain.json.hookId, { filter: { campaign: 'spring' } });
  t.same([grown.status, grown.json], [400, REFUSAL], 'a change that adds a filter');
  t.same(await db.query('SELECT filter FROM webhooks WHERE id = ?', [plain.json.hookId]), [{ filter: null }]);
  const replaced = await patch(hooks[0]!, { filter: filterOf(4096, 99) });
  t.equal(replaced.status, 200, 'a filter replaced is counted once, as the new one');
  t.equal((await patch(hooks[1]!, { filter: null })).status, 200, 'a filter removed frees its share');
  t.equal((await patch(plain.json.hookId, { filter: { campaign: 'spring' } })).status, 200);

  // Detaching a webhook frees its share too.
  t.equal((await send(app, { method: 'DELETE', url: `/webhook/${hooks[2]}`, headers: { 'x-api-key': acme.apiKey } })).status, 204);
  t.equal((await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'], filter: filterOf(4000, 7) })).status, 201);

  // A publication with a lead of 20,000 tags runs them all, and finds the one that matches.
  const tags = Array.from({ length: 20_000 }, (_, i) => 10_000_000 + i);
  const res = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { tags: [...tags, 5 * 1000 + 17] } });
  t.same([res.status, res.json.deliveries], [202, 2], 'the webhook whose list holds 5017, and the one whose filter was removed');
});
