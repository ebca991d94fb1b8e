import fp from 'fastify-plugin';

/**
 * JSON is the only body the API takes: anything else is answered 415 before it is read.
 * `__proto__` and `constructor.prototype` keys are dropped, like any other unknown field. An
 * empty body sent as JSON is no body (HTTP clients often label a bodiless DELETE so), not a parse
 * error; the operation then says whether it needed one.
 */
export const jsonBodyPlugin = fp(
  async (app) => {
    app.removeContentTypeParser('text/plain');
    const parseJson = app.getDefaultJsonParser('remove', 'remove');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
      body === '' ? done(null, undefined) : parseJson(request, body as string, done),
    );
  },
  { name: 'json-body' },
);
