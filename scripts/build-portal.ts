// npm run build, after tsc: the client portal's static files into dist/portal/ (silent, like tsc).
import { buildPortal } from '../support/build-portal.js';

await buildPortal();
