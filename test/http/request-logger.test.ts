import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RequestLogController, requestLogger } from '../../src/http/request-logger.js';

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

t.test("Fastify's lines of each request: written at info, not even asked for above it, except a request that errored", async (t) => {
  for (const level of ['info', 'warn']) {
    const { root, lines } = logger(level);
    const inner = requestLogger(root, { reqId: 'r-4' }, {});
    // Counts the calls Fastify makes: above info, the controller makes none for a line that passes.
    const calls: string[] = [];
    const log = new Proxy(inner, {
      get: (target, name, receiver) => {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const request = { log, raw: {}, id: 'r-4' } as unknown as FastifyRequest;
    const reply = { log, request, statusCode: 200, elapsedTime: 1.5 } as unknown as FastifyReply;
    const controller = new RequestLogController();
    controller.incomingRequest(request, reply);
    controller.requestCompleted(null, request, reply);
    controller.requestCompleted(new Error('socket hang up'), request, reply);
    await flush();
    const messages = lines.map((line) => `${line.level as number} ${line.msg as string}`);
    if (level === 'info') {
      t.same(messages, ['30 incoming request', '30 request completed', '50 request errored'], 'at info, all three lines');
      t.same(calls, ['info', 'info', 'error']);
    } else {
      t.same(messages, ['50 request errored'], 'at warn, the errored request alone');
      t.same(calls, ['error'], 'and the logger is not called for the two info lines');
    }
  }
});

t.test("a route with a log level of its own gets Fastify's info lines at that level", async (t) => {
  const { root, lines } = logger('warn');
  const log = requestLogger(root, { reqId: 'r-5' }, { level: 'debug' });
  const request = { log, raw: {}, id: 'r-5' } as unknown as FastifyRequest;
  const reply = { log, request, statusCode: 200, elapsedTime: 1.5 } as unknown as FastifyReply;
  const controller = new RequestLogController();
  controller.incomingRequest(request, reply);
  controller.requestCompleted(null, request, reply);
  await flush();
  t.same(
    lines.map((line) => line.msg),
    ['incoming request', 'request completed'],
  );
});
