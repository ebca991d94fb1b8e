import type { FastifyInstance } from 'fastify';

// One log line per request, at info, when its answer has gone: what an operator reads an access
// log for (the method, the route, the status, the time taken and the API client), and the
// request's id, which the lines logged while it ran carry too. Fastify's own two lines a request
// (one as it comes in, one as it is answered) are off (fastify-options.ts): writing them halved
// the rate of the cheapest requests. A path that is no route is logged as it came, for there is no
// route to name, and every path is at debug; what a URL quotes is masked like any line
// (src/secrets/credentials.ts).

// Levels at which no line of info is written: at these, no hook at all, rather than one that
// builds each request's line (its route read through Fastify's routeOptions, which makes an object
// each time) only for pino to drop it.
const ABOVE_INFO = new Set(['fatal', 'error', 'warn', 'silent']);

export function logRequests(app: FastifyInstance): void {
  if (ABOVE_INFO.has(app.log.level)) return;
  const everyUrl = app.log.level === 'debug' || app.log.level === 'trace';
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url;
    request.log.info(
      {
        method: request.method,
        ...(route === undefined ? {} : { route }),
        ...(route === undefined || everyUrl ? { url: request.url } : {}),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        ...(request.client ? { client: request.client.id } : {}),
      },
      'request completed',
    );
    done();
  });
}
