import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';

/**
 * openapi.yaml served as it is: the interactive documentation at /documentation, the description
 * at /openapi.json and /openapi.yaml. None of them needs a key.
 */
export const docsPlugin = fp<{ spec: Record<string, unknown> }>(
  async (app, { spec }) => {
    await app.register(fastifySwagger, { mode: 'static', specification: { document: spec as never } });
    await app.register(fastifySwaggerUi, { routePrefix: '/documentation' });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('application/yaml').send(app.swagger({ yaml: true })),
    );
  },
  { name: 'docs' },
);
