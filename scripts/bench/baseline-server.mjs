// Bare Fastify, the baseline (docs/benchmarks.md); POST /v1/traces takes the OTLP/JSON traces.
import Fastify from 'fastify';

const app = Fastify({ bodyLimit: 64 * 2 ** 20 });
app.post('/v1/traces', async () => ({}));
app.get('/', async () => ({ hello: 'world' }));
app.post('/echo', async (request, reply) => reply.code(201).send({ id: 1, ok: typeof request.body === 'object' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
