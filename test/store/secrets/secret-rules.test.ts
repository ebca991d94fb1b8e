// What the stores do to webhooks' secrets, on its own (src/store/secrets/secret-rules.ts); the
// stores' side is in test/store/store-contract.test.ts.
import t from 'tap';
import { answersCursor, sealedSecrets } from '../../../src/store/secrets/secret-rules.js';

const seal = (value: string) => `sealed:${value.toUpperCase()}`;

t.test('sealing a webhook: plain secrets and headers are sealed, sealed and erased ones kept', async (t) => {
  const none = { headers: null };
  t.same(sealedSecrets({ secret: 'whsec_a', previous_secret: 'whsec_b', ...none }, 'sealed:', seal), { secret: 'sealed:WHSEC_A', previous: 'sealed:WHSEC_B', headers: null });
  t.same(sealedSecrets({ secret: 'whsec_a', previous_secret: null, ...none }, 'sealed:', seal), { secret: 'sealed:WHSEC_A', previous: null, headers: null });
  t.same(sealedSecrets({ secret: 'sealed:X', previous_secret: 'whsec_b', ...none }, 'sealed:', seal), { secret: 'sealed:X', previous: 'sealed:WHSEC_B', headers: null });
  t.same(
    sealedSecrets({ secret: 'sealed:X', previous_secret: null, headers: '{"a":"b"}' }, 'sealed:', seal),
    { secret: 'sealed:X', previous: null, headers: 'sealed:{"A":"B"}' },
    'plain headers alone: sealed',
  );
  t.equal(sealedSecrets({ secret: 'sealed:X', previous_secret: 'sealed:Y', headers: 'sealed:Z' }, 'sealed:', seal), undefined, 'all sealed: the row is left');
  t.equal(sealedSecrets({ secret: 'sealed:X', previous_secret: 'sealed:Y', ...none }, 'sealed:', seal), undefined, 'both sealed: the row is left');
  t.equal(sealedSecrets({ secret: '', previous_secret: null, ...none }, 'sealed:', seal), undefined, 'erased: the row is left');
});

t.test('the walk through stored answers goes on from the last one, and ends with an empty batch', async (t) => {
  t.same(answersCursor({ webhookId: 12 }, { scope: 'client:3', idempotency_key: 'k-9' }), { webhookId: 12, answer: { scope: 'client:3', key: 'k-9' } });
  t.equal(answersCursor({ webhookId: 12, answer: { scope: 'client:3', key: 'k-9' } }, undefined), null);
});
