import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { ConfigError, databasePasswords, loadConfig, loadTracingConfig, parseSize, SETTINGS } from '../src/config.js';

t.test('defaults', async (t) => {
  t.same(loadConfig({}), {
    port: 3000,
    host: '127.0.0.1',
    metricsPort: 9464,
    databasePath: './data/leadhooks.db',
    databaseUrl: null,
    databasePoolSize: 10,
    databaseConnectTimeout: 5_000,
    databaseStatementTimeout: 30_000,
    databaseWait: 300_000,
    logLevel: 'info',
    bodyLimit: 16 * 1024,
    requestTimeout: 30_000,
    publisherToken: null,
    adminToken: null,
    publicUrl: null,
    publisherBodyLimit: 256 * 1024,
    publisherBatchBodyLimit: 4 * 1024 * 1024,
    deliveryWorker: true,
    retrySchedule: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    deliveryTimeout: 15_000,
    deliveryConcurrency: 64,
    deliveryPollInterval: 250,
    deliveryRateLimit: 30,
    allowPrivateTargets: false,
    httpProxy: null,
    httpsProxy: null,
    noProxy: '',
    rateLimit: { max: 600, windowMs: 60_000, text: '600/1m' },
    rateLimitShared: true,
    authFailureLimit: { max: 20, windowMs: 60_000, text: '20/1m' },
    maxWebhooksPerClient: 100,
    retention: 30 * 86_400_000,
    pruneInterval: 60_000,
    secretRotationGrace: 86_400_000,
    secretEncryptionKey: null,
    webhookDisableAfter: 5 * 86_400_000,
    portalFrameAncestors: [],
    portalProductName: null,
    portalLogoUrl: null,
    portalAccentColor: null,
    operationalEventsUrl: null,
    operationalEventsSecret: null,
  });
});

t.test('values are read and converted', async (t) => {
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    METRICS_PORT: '9100',
    DATABASE_PATH: '/var/lib/lh.db',
    DATABASE_URL: 'postgresql://leadhooks:s3cret@db.internal:5433/leadhooks?sslmode=require',
    DATABASE_POOL_SIZE: '25',
    DATABASE_CONNECT_TIMEOUT: '2s',
    DATABASE_STATEMENT_TIMEOUT: '10s',
    DATABASE_WAIT: '90s',
    LOG_LEVEL: 'debug',
    BODY_LIMIT: '1mb',
    REQUEST_TIMEOUT: '10s',
    PUBLISHER_TOKEN: 'a-long-enough-publisher-token',
    ADMIN_TOKEN: 'a-long-enough-admin-token',
    PUBLIC_URL: 'https://hooks.example.com/leadhooks/',
    PUBLISHER_BODY_LIMIT: '64kb',
    PUBLISHER_BATCH_BODY_LIMIT: '1mb',
    DELIVERY_WORKER: 'off',
    DELIVERY_RETRY_SCHEDULE: '100ms, 2s,1m,1h',
    DELIVERY_TIMEOUT: '2s',
    DELIVERY_CONCURRENCY: '8',
    DELIVERY_POLL_INTERVAL: '50ms',
    DELIVERY_RATE_LIMIT: '5',
    ALLOW_PRIVATE_TARGETS: 'true',
    HTTP_PROXY: 'http://proxy.internal:3128',
    HTTPS_PROXY: 'http://relay:s3cret@proxy.internal:3129/',
    NO_PROXY: ' localhost,.internal ',
    RATE_LIMIT_PER_KEY: '30 / 10s',
    RATE_LIMIT_SHARED: 'off',
    AUTH_FAILURE_LIMIT: 'off',
    MAX_WEBHOOKS_PER_CLIENT: '5',
    RETENTION: '7d',
    PRUNE_INTERVAL: '10s',
    SECRET_ROTATION_GRACE: '90m',
    SECRET_ENCRYPTION_KEY: 'ab'.repeat(32),
    WEBHOOK_DISABLE_AFTER: '36h',
    PORTAL_FRAME_ANCESTORS: 'https://app.acme.example, http://localhost:5173/ https://app.acme.example',
    PORTAL_PRODUCT_NAME: 'Acme CRM',
    PORTAL_LOGO_URL: 'https://cdn.acme.example/logo.svg',
    PORTAL_ACCENT_COLOR: '#0A7d5a',
  });
  t.same(config, {
    port: 8080,
    host: '0.0.0.0',
    metricsPort: 9100,
    databasePath: '/var/lib/lh.db',
    databaseUrl: 'postgresql://leadhooks:s3cret@db.internal:5433/leadhooks?sslmode=require',
    databasePoolSize: 25,
    databaseConnectTimeout: 2_000,
    databaseStatementTimeout: 10_000,
    databaseWait: 90_000,
    logLevel: 'debug',
    bodyLimit: 1024 * 1024,
    requestTimeout: 10_000,
    publisherToken: 'a-long-enough-publisher-token',
    adminToken: 'a-long-enough-admin-token',
    publicUrl: 'https://hooks.example.com/leadhooks',
    publisherBodyLimit: 64 * 1024,
    publisherBatchBodyLimit: 1024 * 1024,
    deliveryWorker: false,
    retrySchedule: [100, 2_000, 60_000, 3_600_000],
    deliveryTimeout: 2_000,
    deliveryConcurrency: 8,
    deliveryPollInterval: 50,
    deliveryRateLimit: 5,
    allowPrivateTargets: true,
    httpProxy: 'http://proxy.internal:3128/',
    httpsProxy: 'http://relay:s3cret@proxy.internal:3129/',
    noProxy: 'localhost,.internal',
    rateLimit: { max: 30, windowMs: 10_000, text: '30 / 10s' },
    rateLimitShared: false,
    authFailureLimit: null,
    maxWebhooksPerClient: 5,
    retention: 7 * 86_400_000,
    pruneInterval: 10_000,
    secretRotationGrace: 90 * 60_000,
    secretEncryptionKey: Buffer.alloc(32, 0xab),
    webhookDisableAfter: 36 * 3_600_000,
    portalFrameAncestors: ['https://app.acme.example', 'http://localhost:5173'],
    portalProductName: 'Acme CRM',
    portalLogoUrl: 'https://cdn.acme.example/logo.svg',
    portalAccentColor: '#0A7d5a',
    operationalEventsUrl: null,
    operationalEventsSecret: null,
  });
  t.equal(loadConfig({ RATE_LIMIT_PER_KEY: 'off' }).rateLimit, null);
  t.equal(loadConfig({ DELIVERY_RATE_LIMIT: 'off' }).deliveryRateLimit, null, 'no default rate');
  t.equal(loadConfig({ WEBHOOK_DISABLE_AFTER: 'off' }).webhookDisableAfter, null, 'off: webhooks are never disabled');
  t.equal(loadConfig({ WEBHOOK_DISABLE_AFTER: 'OFF' }).webhookDisableAfter, null);
  t.equal(loadConfig({ PORT: '' }).port, 3000, 'an empty value counts as unset');
  t.same(loadConfig({ DELIVERY_RETRY_SCHEDULE: '0ms' }).retrySchedule, [0]);
  t.equal(loadConfig({ DATABASE_WAIT: '0s' }).databaseWait, 0, '0s: a start does not wait for the database');
});

t.test('a bad value stops start-up with a message naming the variable', async (t) => {
  const bad: Record<string, string> = {
    PORT: '70000',
    HOST: '   ',
    METRICS_PORT: 'metrics',
    DATABASE_URL: 'mysql://root@127.0.0.1/leadhooks',
    DATABASE_POOL_SIZE: '0',
    DATABASE_CONNECT_TIMEOUT: '5',
    DATABASE_STATEMENT_TIMEOUT: '0ms',
    DATABASE_WAIT: '5',
    LOG_LEVEL: 'loud',
    BODY_LIMIT: '16',
    REQUEST_TIMEOUT: '30',
    PUBLISHER_BODY_LIMIT: 'big',
    PUBLIC_URL: 'hooks.example.com',
    DELIVERY_WORKER: 'maybe',
    DELIVERY_RETRY_SCHEDULE: '5s,5',
    DELIVERY_TIMEOUT: '0s',
    DELIVERY_CONCURRENCY: '0',
    DELIVERY_POLL_INTERVAL: '1',
    DELIVERY_RATE_LIMIT: '0',
    ALLOW_PRIVATE_TARGETS: 'yes please',
    RATE_LIMIT_PER_KEY: '600',
    RATE_LIMIT_SHARED: 'per key',
    MAX_WEBHOOKS_PER_CLIENT: '-1',
    RETENTION: '30',
    PRUNE_INTERVAL: '0s',
    SECRET_ROTATION_GRACE: '24',
    SECRET_ENCRYPTION_KEY: 'c2hvcnQ=',
    WEBHOOK_DISABLE_AFTER: '0d',
    PORTAL_FRAME_ANCESTORS: 'https://app.acme.example/embed',
    PORTAL_PRODUCT_NAME: 'Acme\nCRM',
    PORTAL_LOGO_URL: 'http://cdn.acme.example/logo.svg',
    PORTAL_ACCENT_COLOR: 'red',
  };
  for (const [name, value] of Object.entries(bad)) {
    t.throws(() => loadConfig({ [name]: value }), ConfigError, name);
    try {
      loadConfig({ [name]: value });
    } catch (error) {
      t.match((error as Error).message, new RegExp(`^${name}=.* is not valid: expected `), name);
    }
  }
  t.throws(() => loadConfig({ PORT: 'abc' }), /PORT="abc" is not valid: expected a port number/);
  t.throws(() => loadConfig({ WEBHOOK_DISABLE_AFTER: 'never' }), { message: 'WEBHOOK_DISABLE_AFTER="never" is not valid: expected a duration with a unit, such as 5d, or off' });
});

t.test('a bad publisher token is refused without being echoed', async (t) => {
  t.throws(() => loadConfig({ PUBLISHER_TOKEN: 'short-secret' }), {
    message: 'PUBLISHER_TOKEN=(value hidden) is not valid: expected a secret of at least 16 characters (unset disables POST /events)',
  });
});

t.test('the proxy variables: lower-case forms read too and winning, a bad URL refused with its password masked', async (t) => {
  const lower = loadConfig({ http_proxy: 'http://lower:3128', HTTP_PROXY: 'http://upper:3128', https_proxy: '', HTTPS_PROXY: 'https://upper:3129', no_proxy: 'a.example' });
  t.same([lower.httpProxy, lower.httpsProxy, lower.noProxy], ['http://lower:3128/', 'https://upper:3129/', 'a.example'], 'an empty lower-case form counts as unset');
  t.equal(loadConfig({ NO_PROXY: 'b.example' }).noProxy, 'b.example');
  t.throws(() => loadConfig({ HTTPS_PROXY: 'socks5://relay:hunter2hunter2@proxy:1080' }), {
    message: 'HTTPS_PROXY="socks5://relay:***@proxy:1080" is not valid: expected an http:// or https:// proxy URL, such as http://proxy.internal:3128 (unset: HTTP_PROXY)',
  });
  t.throws(() => loadConfig({ http_proxy: 'proxy.internal:3128' }), { message: /^http_proxy="proxy.internal:3128" is not valid/ }, 'the variable named as it was written');
});

t.test('a DATABASE_URL that is not a PostgreSQL URL is refused, its password never echoed', async (t) => {
  t.equal(loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' }).databaseUrl, 'postgres://postgres@127.0.0.1:5432/test');
  t.equal(loadConfig({ DATABASE_URL: '' }).databaseUrl, null, 'empty: SQLite');
  t.throws(() => loadConfig({ DATABASE_URL: 'mysql://admin:hunter2hunter2@db/leadhooks' }), {
    message: 'DATABASE_URL="mysql://admin:***@db/leadhooks" is not valid: expected a PostgreSQL URL, such as postgres://user:password@host:5432/leadhooks (unset: SQLite at DATABASE_PATH)',
  });
  t.throws(() => loadConfig({ DATABASE_URL: 'leadhooks' }), /^DATABASE_URL=\(value hidden\) is not valid/, 'not a URL');
  t.throws(() => loadConfig({ DATABASE_URL: 'mysql://db/x?password=hunter2' }), { message: /^DATABASE_URL="mysql:\/\/db\/x\?password=\*\*\*" is not valid/ });
  t.throws(() => loadConfig({ DATABASE_URL: 'hunter2 is my password' }), { message: /^DATABASE_URL=\(value hidden\) is not valid/ });
});

t.test('the passwords of a database URL, decoded, for the log to mask', async (t) => {
  t.same(databasePasswords('postgres://leadhooks:p%40ss%2Fword@db/leadhooks'), ['p@ss/word']);
  t.same(databasePasswords('postgres://leadhooks@db/leadhooks?password=s3cret%2B1'), ['s3cret+1']);
  t.same(databasePasswords('postgres://leadhooks@db/leadhooks'), []);
});

t.test('sizes', async (t) => {
  t.equal(parseSize('512b'), 512);
  t.equal(parseSize('16KB'), 16384);
  t.equal(parseSize('2mb'), 2097152);
  t.equal(parseSize('0kb'), undefined);
  t.equal(parseSize('1gb'), undefined);
  t.equal(parseSize('12'), undefined);
});

t.test('SECRET_ENCRYPTION_KEY: 32 bytes as hex or base64; anything else refused without echoing it', async (t) => {
  const key = Buffer.alloc(32, 7);
  t.same(loadConfig({ SECRET_ENCRYPTION_KEY: key.toString('base64') }).secretEncryptionKey, key);
  t.same(loadConfig({ SECRET_ENCRYPTION_KEY: key.toString('hex') }).secretEncryptionKey, key);
  for (const bad of ['c2hvcnQ=', 'zz'.repeat(32), Buffer.alloc(31).toString('base64'), Buffer.alloc(33).toString('base64'), 'passphrase-not-a-key']) {
    t.throws(() => loadConfig({ SECRET_ENCRYPTION_KEY: bad }), {
      message: 'SECRET_ENCRYPTION_KEY=(value hidden) is not valid: expected 32 bytes as 64 hex digits or as base64 (openssl rand -base64 32)',
    }, bad);
  }
});

t.test('every setting is in .env.example and in the configuration table of docs/operations.md', async (t) => {
  const example = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
  const readme = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
  for (const { env: name } of Object.values(SETTINGS)) {
    t.match(example, new RegExp(`^(# )?${name}=`, 'm'), `${name} in .env.example`);
    t.match(readme, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `${name} in the configuration table`);
  }
});

t.test('the OpenTelemetry variables leadhooks decides by: read as the SDK reads them, none refused', async (t) => {
  t.same(loadTracingConfig({}), { endpoint: null, tracesEndpoint: null, sdkDisabled: false, sdkLogLevel: null, serviceName: 'leadhooks' });
  t.same(
    loadTracingConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces',
      OTEL_SDK_DISABLED: ' TRUE ',
      OTEL_LOG_LEVEL: 'debug',
      OTEL_SERVICE_NAME: 'hooks-eu',
    }),
    { endpoint: 'http://collector:4318', tracesEndpoint: 'http://collector:4318/v1/traces', sdkDisabled: true, sdkLogLevel: 'debug', serviceName: 'hooks-eu' },
  );
  t.same(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_SDK_DISABLED: 'maybe' }), loadTracingConfig({}), 'blank is unset; only true disables');
});

t.test('only src/config.ts reads process.env (src/start/cli.ts hands it to the CLI)', async (t) => {
  const src = new URL('../src/', import.meta.url);
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  const readers = files.filter((file) => readFileSync(new URL(file, src), 'utf8').includes('process.env'));
  t.same(readers.sort(), ['config.ts', 'start/cli.ts']);
});

t.test('the portal settings: origins exactly, https or http on loopback; a name, a logo and a colour the API would take', async (t) => {
  const ancestors = (value: string) => loadConfig({ PORTAL_FRAME_ANCESTORS: value }).portalFrameAncestors;
  t.same(ancestors('http://127.0.0.1:8080,http://[::1]:3000 https://xn--bcher-kva.example'), ['http://127.0.0.1:8080', 'http://[::1]:3000', 'https://xn--bcher-kva.example']);
  for (const value of [
    'app.acme.example',
    'HTTPS://App.Acme.Example:443',
    'https://*.acme.example',
    "'self'",
    'https://app.acme.example/path',
    'https://app.acme.example?x=1',
    'https://user@app.acme.example',
    'http://app.acme.example',
    'http://10.0.0.5:8080',
    'javascript:alert(1)',
    "https://a.example; script-src 'unsafe-inline'",
    Array.from({ length: 33 }, (_, i) => `https://a${i}.example`).join(','),
  ]) {
    t.throws(() => ancestors(value), { message: /^PORTAL_FRAME_ANCESTORS=.* is not valid: expected up to 32 origins, comma-separated/ }, value);
  }
  const logo = (value: string) => loadConfig({ PORTAL_LOGO_URL: value }).portalLogoUrl;
  t.equal(logo('http://127.0.0.1:9000/logo.png'), 'http://127.0.0.1:9000/logo.png', 'http on loopback, for development and tests');
  t.equal(logo('http://localhost/logo.png'), 'http://localhost/logo.png');
  for (const value of ['http://cdn.example/logo.png', 'data:image/png;base64,AAAA', 'javascript:alert(1)', 'https://u:p@cdn.example/l.png', `https://cdn.example/${'a'.repeat(2040)}`, '/logo.png']) {
    t.throws(() => logo(value), { message: /^PORTAL_LOGO_URL=.* is not valid: expected an https URL/ }, value);
  }
  for (const value of ['#fff', '#12345g', '0a7d5a', 'red;background:url(x)', '#0a7d5a ', 'var(--x)']) {
    t.throws(() => loadConfig({ PORTAL_ACCENT_COLOR: value }), { message: /^PORTAL_ACCENT_COLOR=.* is not valid: expected a colour as # and six hex digits/ }, value);
  }
  for (const value of ['   ', 'a'.repeat(81), 'Acme\u0000', 'Acme\u0085CRM', 'Acme\u202eMRC', '\u2066Acme\u2069', 'Ac\u200bme', '\ufeffAcme']) {
    t.throws(() => loadConfig({ PORTAL_PRODUCT_NAME: value }), { message: /^PORTAL_PRODUCT_NAME=.* is not valid: expected a name of 1 to 80 characters/ }, JSON.stringify(value));
  }
  t.equal(loadConfig({ PORTAL_PRODUCT_NAME: '<b>Acme</b> & "Co"' }).portalProductName, '<b>Acme</b> & "Co"', 'markup is only text: the page writes it as such');
  t.equal(loadConfig({ PORTAL_PRODUCT_NAME: 'می\u200cخواهم 👩\u200d💻' }).portalProductName, 'می\u200cخواهم 👩\u200d💻', 'the joiners scripts and emoji need');
});

t.test("the lead product's address for operational events, and the secret that signs them", async (t) => {
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  t.match(loadConfig({}), { operationalEventsUrl: null, operationalEventsSecret: null }, 'unset: none are sent');
  t.match(loadConfig({ OPERATIONAL_EVENTS_URL: 'https://crm.internal/leadhooks?from=ops', OPERATIONAL_EVENTS_SECRET: secret }), {
    operationalEventsUrl: 'https://crm.internal/leadhooks?from=ops',
    operationalEventsSecret: secret,
  });
  for (const bad of ['crm.internal/hooks', 'ftp://crm.internal/', 'https://user:pw@crm.internal/', 'https://']) {
    t.throws(() => loadConfig({ OPERATIONAL_EVENTS_URL: bad, OPERATIONAL_EVENTS_SECRET: secret }), {
      message: `OPERATIONAL_EVENTS_URL=${JSON.stringify(bad)} is not valid: expected an http or https URL without a user name or password (unset: operational events are not sent to the lead product)`,
    }, bad);
  }
  for (const bad of ['secret-but-not-whsec', 'whsec_', `whsec_${Buffer.alloc(8).toString('base64')}`, `whsec_${Buffer.alloc(65).toString('base64')}`, 'whsec_!!!']) {
    t.throws(() => loadConfig({ OPERATIONAL_EVENTS_SECRET: bad }), {
      message: 'OPERATIONAL_EVENTS_SECRET=(value hidden) is not valid: expected a signing secret: whsec_ and the base64 of 24 to 64 random bytes (echo whsec_$(openssl rand -base64 32))',
    }, 'refused, and never echoed');
  }
  t.throws(() => loadConfig({ OPERATIONAL_EVENTS_URL: 'https://crm.internal/leadhooks' }), {
    message: 'OPERATIONAL_EVENTS_URL is set but OPERATIONAL_EVENTS_SECRET is not: the requests to it must be signed',
  });
});
