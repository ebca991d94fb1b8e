// npm run build, after tsc: the client portal's static files into dist/portal/ (silent, like tsc),
// by portal/build.ts.
import { buildPortal } from '../portal/build.js';

await buildPortal();
