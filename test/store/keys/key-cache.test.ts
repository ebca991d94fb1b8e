import t from 'tap';
import { withKeyCache, type KeyChanges } from '../../../src/store/keys/key-cache.js';
import type { ApiKeyRecord, Client, KeyRepository } from '../../../src/store/store.js';

// The key cache over any store (src/store/keys/key-cache.ts): what it answers from memory, and what
// makes it ask the store again. Each store's own signal is tested with it, on two processes, in
// test/postgres/replicas.test.ts and test/handlers/about.test.ts.

const acme: Client = { id: 1, name: 'Acme Realty', createdAt: '2026-01-01T00:00:00.000Z' };
const revokedKey: ApiKeyRecord = { id: 1, clientId: 1, prefix: 'lh_abcdefgh', createdAt: acme.createdAt, lastUsedAt: null, revokedAt: '2026-01-02T00:00:00.000Z', expiresAt: null };
/** The client of the key with this hash, as `keys` finds it. */
const clientOf = async (keys: KeyRepository, hash: string) => (await keys.findKey(hash))?.client;

/** A key repository that knows the hashes in `owners`, counting its lookups; each lookup waits for `gate` when set. */
function fakeKeys(owners: Map<string, Client>) {
  const state = { lookups: 0, gate: undefined as Promise<void> | undefined };
  const keys: KeyRepository = {
    create: async () => undefined,
    list: async () => [],
    recordUse: async () => {},
    async revoke() {
      owners.clear();
      return revokedKey;
    },
    async findKey(hash) {
      state.lookups++;
      const client = owners.get(hash);
      await state.gate;
      return client && { id: 1, prefix: 'lh_cached00', expiresAt: null, client };
    },
  };
  return { keys, state };
}

function fakeChanges() {
  const changes = { usable: true, clear: () => {} };
  const signal: KeyChanges = {
    watch(clear) {
      changes.clear = clear;
    },
    usable: () => changes.usable,
  };
  return { signal, changes };
}

t.test('a known key is looked up once, then answered from memory; unknown keys are asked each time', async (t) => {
  const { keys, state } = fakeKeys(new Map([['h1', acme]]));
  const cached = withKeyCache(keys, fakeChanges().signal);
  t.same(await clientOf(cached, 'h1'), acme);
  t.same(await clientOf(cached, 'h1'), acme);
  t.equal(state.lookups, 1);
  t.equal(await clientOf(cached, 'unknown'), undefined);
  t.equal(await clientOf(cached, 'unknown'), undefined);
  t.equal(state.lookups, 3, 'an unknown key is not kept');
});

t.test('a revocation through the cache empties it; so does a change its store signals', async (t) => {
  const owners = new Map([['h1', acme]]);
  const { keys, state } = fakeKeys(owners);
  const { signal, changes } = fakeChanges();
  const cached = withKeyCache(keys, signal);
  await clientOf(cached, 'h1');
  t.same(await cached.revoke('lh_abcdefgh'), revokedKey);
  t.equal(await clientOf(cached, 'h1'), undefined, 'asked again, and refused');

  owners.set('h2', acme);
  await clientOf(cached, 'h2');
  owners.delete('h2');
  changes.clear();
  t.equal(await clientOf(cached, 'h2'), undefined, 'asked again after the signal');
  t.equal(state.lookups, 4);
});

t.test('while its store says it may not answer, every lookup goes to the store', async (t) => {
  const { keys, state } = fakeKeys(new Map([['h1', acme]]));
  const { signal, changes } = fakeChanges();
  const cached = withKeyCache(keys, signal);
  changes.usable = false;
  await clientOf(cached, 'h1');
  await clientOf(cached, 'h1');
  t.equal(state.lookups, 2);
  changes.usable = true;
  t.same(await clientOf(cached, 'h1'), acme);
  t.equal(state.lookups, 2, 'what was looked up meanwhile is kept');
});

t.test('a lookup under way when the cache is emptied answers its request, but is not kept', async (t) => {
  const owners = new Map([['h1', acme]]);
  const { keys, state } = fakeKeys(owners);
  const { signal, changes } = fakeChanges();
  const cached = withKeyCache(keys, signal);
  let open!: () => void;
  state.gate = new Promise((resolve) => (open = resolve));
  const pending = clientOf(cached, 'h1');
  owners.clear();
  changes.clear();
  open();
  t.same(await pending, acme, 'it read the key before the change');
  state.gate = undefined;
  t.equal(await clientOf(cached, 'h1'), undefined, 'the next request asks the store');
  t.equal(state.lookups, 2);
});
