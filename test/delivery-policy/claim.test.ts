// The claim's decisions on their own, as both stores feed them rows
// (src/delivery-policy/claim.ts); test/store/store-contract.test.ts holds each store's claim
// to the same rules on a database.
import t from 'tap';
import { createClaimPicker, createReleaser, RELEASE_BATCH, type ClaimRequest, type WebhookAtClaim } from '../../src/delivery-policy/claim.js';

const NOW = 1_000_000;
const request = (changes: Partial<ClaimRequest> = {}): ClaimRequest => ({
  now: NOW,
  limit: 10,
  leaseUntil: NOW + 60_000,
  inFlight: new Map(),
  perWebhook: 2,
  defaultRate: null,
  ...changes,
});
const webhook = (id: number, changes: Partial<WebhookAtClaim> = {}): WebhookAtClaim => ({
  id,
  paused: false,
  rate_limit: null,
  pace_at: 0,
  slow_until: 0,
  ...changes,
});
/** A due delivery of `webhookId`, due at NOW, never paced. */
const due = (id: number, webhookId: number, changes: { paced?: boolean; due_at?: number } = {}) => ({
  id,
  webhook_id: webhookId,
  paced: false,
  due_at: NOW,
  ...changes,
});
const ids = (rows: readonly { id: number }[]) => rows.map((row) => row.id);

t.test('the window is four times the limit, at least 16', async (t) => {
  t.equal(createClaimPicker(request({ limit: 1 })).window, 16);
  t.equal(createClaimPicker(request({ limit: 4 })).window, 16);
  t.equal(createClaimPicker(request({ limit: 10 })).window, 40);
});

t.test('a webhook takes no more than perWebhook in flight, counting the larger of its leases and this worker\'s own', async (t) => {
  const picker = createClaimPicker(request({ perWebhook: 3, inFlight: new Map([[1, 1], [2, 1]]) }));
  t.same(picker.meet([webhook(1), webhook(2, { leased: 2 }), webhook(3, { leased: 0 })]), [], 'none paused: nothing to hold');
  t.same([picker.roomFor(1), picker.roomFor(2), picker.roomFor(3)], [2, 1, 3]);
  picker.offer([1, 2, 3, 4].map((id) => due(id, 1)));
  picker.offer([5, 6].map((id) => due(id, 2)));
  t.same(ids(picker.picked), [1, 2, 5], 'two of webhook 1, one of webhook 2');
  t.same([picker.roomFor(1), picker.roomFor(2), picker.roomFor(3)], [0, 0, 3], 'the room left');
  t.same([...picker.deferred], [], 'no rate: nothing deferred');
  t.same([...picker.paces], [], 'no rate: no pace moved');
});

t.test('a paused webhook is held once per claim and has no room; one not met has none either', async (t) => {
  const picker = createClaimPicker(request());
  t.same(picker.meet([webhook(1, { paused: true }), webhook(2), webhook(3, { paused: true }), webhook(1, { paused: true })]), [1, 3]);
  t.same(picker.meet([webhook(3, { paused: true }), webhook(4, { paused: true })]), [4], 'a webhook met already is not held again');
  t.same(picker.meet([webhook(2, { paused: true })]), [], 'nor is what the claim learnt of it changed');
  picker.offer([due(1, 1), due(2, 2), due(3, 3), due(4, 9)]);
  t.same(ids(picker.picked), [2], 'only the active webhook\'s delivery');
  t.equal(picker.roomFor(9), 0);
  t.same([picker.knows(1), picker.knows(9)], [true, false]);
});

t.test('mayTake: a webhook met with room, or not met and under the cap by this worker\'s count', async (t) => {
  const picker = createClaimPicker(request({ perWebhook: 2, inFlight: new Map([[5, 2], [6, 1]]) }));
  picker.meet([webhook(1), webhook(2, { paused: true }), webhook(3, { leased: 2 })]);
  t.same([1, 2, 3, 5, 6, 7].map((id) => picker.mayTake(id)), [true, false, false, false, true, true]);
  picker.offer([due(10, 1), due(11, 1)]);
  t.equal(picker.mayTake(1), false, 'its room taken by this claim');
});

t.test('offer stops at the limit, keeps the order it is given, and never takes a delivery twice', async (t) => {
  const picker = createClaimPicker(request({ limit: 3, perWebhook: 5 }));
  picker.meet([webhook(1), webhook(2)]);
  picker.offer([due(4, 2), due(1, 1)]);
  t.equal(picker.full, false);
  picker.offer([due(1, 1), due(2, 1), due(3, 1), due(5, 2)]);
  t.same(ids(picker.picked), [4, 1, 2]);
  t.equal(picker.full, true);
  t.same([picker.roomFor(1), picker.roomFor(2)], [3, 4], 'what was not taken keeps its room');
});

t.test('goesRound: only when the first read filled the window and the claim is short', async (t) => {
  const picker = createClaimPicker(request({ limit: 2 }));
  t.equal(picker.goesRound(15), false, 'the window was not full: nothing more is due');
  t.equal(picker.goesRound(16), true);
  picker.meet([webhook(1)]);
  picker.offer([due(1, 1), due(2, 1)]);
  t.equal(picker.goesRound(16), false, 'the claim has its limit');
});

t.test('pacing: a delivery past its webhook\'s rate is deferred to its turn, and the webhook\'s next free time moves on', async (t) => {
  const picker = createClaimPicker(request({ defaultRate: 4 }));
  picker.meet([webhook(1, { rate_limit: 2, pace_at: NOW - 5_000 }), webhook(2), webhook(3, { slow_until: NOW + 3_000 })]);
  picker.offer([due(1, 1), due(2, 1), due(3, 1), due(4, 2), due(5, 2), due(6, 3)]);
  t.same(ids(picker.picked), [1, 4], 'one per webhook now; webhook 3 waits for its 429');
  t.same([...picker.deferred], [[2, NOW + 500], [3, NOW + 1_000], [5, NOW + 250], [6, NOW + 3_000]], 'its own rate (2/s), the default (4/s), the wait');
  t.same([...picker.paces], [[1, NOW + 1_500], [2, NOW + 500], [3, NOW + 3_250]]);
  t.equal(picker.roomFor(1), 1, 'a deferred delivery takes no room');

  const turns = createClaimPicker(request({ defaultRate: 4 }));
  turns.meet([webhook(1, { rate_limit: 2, pace_at: NOW + 400, slow_until: NOW - 250 })]);
  turns.offer([due(7, 1, { paced: true, due_at: NOW - 200 }), due(8, 1, { paced: true, due_at: NOW - 300 }), due(9, 1)]);
  t.same(ids(turns.picked), [7], 'a turn given before is kept: taken without pacing it again');
  t.same([...turns.deferred], [[8, NOW + 400], [9, NOW + 900]], 'one that fell within a 429\'s wait is not kept: it takes a new turn, as does a new one');
  t.same([...turns.paces], [[1, NOW + 1_400]]);
});

t.test('release: a batch per claim, webhook after webhook; a webhook released in full loses its mark', async (t) => {
  const releaser = createReleaser();
  t.same([releaser.left, releaser.spent], [RELEASE_BATCH, false]);
  t.equal(releaser.released(30), true, 'fewer than asked: none left held');
  t.equal(releaser.left, RELEASE_BATCH - 30);
  t.equal(releaser.released(RELEASE_BATCH - 30), false, 'as many as asked: there may be more');
  t.same([releaser.left, releaser.spent], [0, true]);
});
