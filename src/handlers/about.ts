import type { Handlers } from './types.js';

export function createAboutHandlers(): Pick<Handlers, 'getAbout'> {
  return {
    async getAbout({ client }) {
      return { status: 200, body: { name: client.name } };
    },
  };
}
