import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { requestLogger } from '../../src/http/request-logger.js';

function logger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const root = pino({ level }, stream);
  let children = 0;
  const child = root.child.bind(root);
  root.child = ((...args: Parameters<typeof child>) => {
    children++;
    return child(...args);
  }) as typeof root.child;
  return { root, lines, children: () => children };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

t.test('a request that logs nothing its level lets through gets no child logger', async (t) => {
  const { root, lines, children } = logger('warn');
  const log = requestLogger(root, { reqId: 'r-1' }, {});
  log.info('incoming request');
  log.debug('details');
  await flush();
  t.equal(children(), 0);
  t.same(lines, []);
  t.equal(log.level, 'warn');
});

t.test('its first line that passes makes the child once, bound to the request id', async (t) => {
  const { root, lines, children } = logger('warn');
  const log = requestLogger(root, { reqId: 'r-2' }, {});
  log.error({ code: 'E1' }, 'request failed');
  log.warn('again');
  log.info('still filtered');
  await flush();
  t.equal(children(), 1);
  t.match(lines, [
    { level: 50, reqId: 'r-2', code: 'E1', msg: 'request failed' },
    { level: 40, reqId: 'r-2', msg: 'again' },
  ]);
  t.equal(lines.length, 2);
  t.match(log.child({ component: 'x' }).level, 'warn');
});

t.test('a route with a log level of its own gets a real child at once', async (t) => {
  const { root, children } = logger('warn');
  const log = requestLogger(root, { reqId: 'r-3' }, { level: 'debug' });
  t.equal(children(), 1);
  t.equal(log.level, 'debug');
});
