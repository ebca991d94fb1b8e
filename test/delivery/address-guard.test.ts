import t from 'tap';
import { isPublicAddress, publicOnlyLookup } from '../../src/delivery/address-guard.js';

t.test('non-public addresses are refused', async (t) => {
  const refused = [
    '127.0.0.1', '127.255.0.9', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '100.127.255.255', '0.0.0.0', '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1',
    '192.0.2.10', '198.51.100.7', '203.0.113.9', '198.18.0.1',
    '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
    '::ffff:7f00:1', '64:ff9b::7f00:1', '2001:db8::1', 'not an address', '',
  ];
  for (const address of refused) t.equal(isPublicAddress(address), false, address);
});

t.test('public addresses are allowed', async (t) => {
  const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'];
  for (const address of allowed) t.equal(isPublicAddress(address), true, address);
});

t.test('the lookup never hands a non-public address to the socket', async (t) => {
  const result = await new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
    publicOnlyLookup('localhost', { all: true }, (error, address) => resolve({ error, address })),
  );
  t.equal(result.error?.message, 'blocked: localhost is not a public address (ALLOW_PRIVATE_TARGETS is off)', 'the name, not what it resolved to');
  t.match((result.error as { address?: string }).address, /^(127\.0\.0\.1|::1)$/, 'the address is kept for the operator');
});
