import t from 'tap';
import { whyLinkRefused } from '../../../src/store/portal-links/portal-link-rules.js';

// What a portal link may still do (src/store/portal-links/portal-link-rules.ts), as both stores
// ask it under the link's row lock.

const NOW = '2026-11-26T10:00:00.000Z';

t.test('a link opens once, before it expires, while its client is active', async (t) => {
  t.equal(whyLinkRefused({ expiresAt: '2026-11-26T10:10:00.000Z', usedAt: null, clientActive: true }, NOW), undefined, 'unused, unexpired: it opens');
  t.equal(whyLinkRefused(undefined, NOW), 'unknown', 'no such link');
  t.equal(whyLinkRefused({ expiresAt: '2026-11-26T10:10:00.000Z', usedAt: '2026-11-26T09:59:00.000Z', clientActive: true }, NOW), 'used');
  t.equal(whyLinkRefused({ expiresAt: NOW, usedAt: null, clientActive: true }, NOW), 'expired', 'expired at its expiry time');
  t.equal(whyLinkRefused({ expiresAt: '2026-11-26T10:10:00.000Z', usedAt: null, clientActive: false }, NOW), 'inactive', 'its client made inactive');
  t.equal(whyLinkRefused({ expiresAt: NOW, usedAt: null, clientActive: false }, NOW), 'expired', 'expired and inactive: expired, as before the client changed');
  t.equal(whyLinkRefused({ expiresAt: '2026-11-26T09:00:00.000Z', usedAt: '2026-11-26T08:59:00.000Z', clientActive: true }, NOW), 'used', 'used and expired: used says more');
});
