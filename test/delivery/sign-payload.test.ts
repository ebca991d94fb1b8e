import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { signPayload } from '../../src/secrets/sign-payload.js';

// Signatures as the Standard Webhooks reference library makes them, for each secret, however many
// secrets the server signs with (each secret's key is made once and kept, up to a limit).

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const reference = (secret: string, id: string, timestamp: number, body: string) => new Webhook(secret).sign(id, new Date(timestamp * 1000), body);

t.test('each secret signs as the reference library does, also when secrets alternate', async (t) => {
  const [a, b] = [newSecret(), newSecret()];
  const body = JSON.stringify({ type: 'lead_create', data: { id: 1 } });
  for (const [secret, id] of [[a, 'evt_1'], [b, 'evt_1'], [a, 'evt_2'], [b, 'evt_3']] as const) {
    t.equal(signPayload(secret, id, 1_700_000_000, body), reference(secret, id, 1_700_000_000, body), `${id} with secret ${secret === a ? 'a' : 'b'}`);
  }
  t.not(signPayload(a, 'evt_1', 1_700_000_000, body), signPayload(b, 'evt_1', 1_700_000_000, body), 'two secrets, two signatures');
});

t.test('past the cache limit of 10,000 secrets, every secret still signs correctly', async (t) => {
  const secrets = Array.from({ length: 10_050 }, newSecret);
  const wrong = secrets.filter((secret, i) => signPayload(secret, `evt_${i}`, 1_700_000_000, '{}') !== reference(secret, `evt_${i}`, 1_700_000_000, '{}'));
  t.equal(wrong.length, 0, 'all 10,050 signatures match the reference');
  t.equal(signPayload(secrets[0]!, 'evt_again', 1_700_000_001, '{}'), reference(secrets[0]!, 'evt_again', 1_700_000_001, '{}'), 'and the first again');
});
