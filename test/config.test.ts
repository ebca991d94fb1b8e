import t from 'tap';
import { ConfigError, loadConfig, parseSize } from '../src/config.js';

t.test('defaults', async (t) => {
  t.same(loadConfig({}), {
    port: 3000,
    host: '127.0.0.1',
    databasePath: './data/leadhooks.db',
    logLevel: 'info',
    bodyLimit: 16 * 1024,
  });
});

t.test('values are read and converted', async (t) => {
  const config = loadConfig({ PORT: '8080', HOST: '0.0.0.0', DATABASE_PATH: '/var/lib/lh.db', LOG_LEVEL: 'debug', BODY_LIMIT: '1mb' });
  t.same(config, { port: 8080, host: '0.0.0.0', databasePath: '/var/lib/lh.db', logLevel: 'debug', bodyLimit: 1024 * 1024 });
  t.equal(loadConfig({ PORT: '' }).port, 3000, 'an empty value counts as unset');
});

t.test('a bad value stops start-up with a message naming the variable', async (t) => {
  const bad: Record<string, string> = {
    PORT: '70000',
    HOST: '   ',
    LOG_LEVEL: 'loud',
    BODY_LIMIT: '16',
  };
  for (const [name, value] of Object.entries(bad)) {
    t.throws(() => loadConfig({ [name]: value }), new ConfigError(`${name}=${JSON.stringify(value)} is not valid`), name);
    try {
      loadConfig({ [name]: value });
    } catch (error) {
      t.match((error as Error).message, new RegExp(`^${name}=.* is not valid: expected `), name);
    }
  }
  t.throws(() => loadConfig({ PORT: 'abc' }), /PORT="abc" is not valid: expected a port number/);
});

t.test('sizes', async (t) => {
  t.equal(parseSize('512b'), 512);
  t.equal(parseSize('16KB'), 16384);
  t.equal(parseSize('2mb'), 2097152);
  t.equal(parseSize('0kb'), undefined);
  t.equal(parseSize('1gb'), undefined);
  t.equal(parseSize('12'), undefined);
});
