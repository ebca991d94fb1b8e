// The baselines: bare Fastify, nothing else. GET / answers a hello world; POST /echo parses a
// JSON body (of a webhook creation's size) and answers 201 with a small JSON object. Another one
// takes traces as an OTLP/JSON receiver would (POST /v1/traces: batches of up to 512 spans).
import Fastify from 'fastify';

const app = Fastify({ bodyLimit: 64 * 2 ** 20 });
app.post('/v1/traces', async () => ({}));
app.get('/', async () => ({ hello: 'world' }));
app.post('/echo', async (request, reply) => {
  const body = request.body;
  return reply.code(201).send({ id: 1, ok: typeof body === 'object' });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
// Stopped by the bench with SIGTERM: a clean exit.
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
