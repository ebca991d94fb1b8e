import { readFileSync } from 'node:fs';
import t from 'tap';
import { nodeOptionsIn } from '../scripts/bench/server-process.js';
import { sectionBlocks } from './helpers/readme.js';

// The server and the worker run with the node options of their package.json scripts (a small
// young generation: README, "Performance"). The deployment commands the README gives run them the
// same way, and the bench reads the options from the same scripts (scripts/bench/server-process.ts).

const scripts = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts;
const optionsBefore = (command: string, file: string) => nodeOptionsIn(command, file)?.join(' ');

t.test('npm start and npm run worker run node with the same options, a capped young generation among them', async (t) => {
  const server = optionsBefore(scripts.start!, 'dist/src/server.js');
  t.equal(server, '--max-semi-space-size=4');
  t.equal(optionsBefore(scripts.worker!, 'dist/src/worker.js'), server);
});

t.test("the README's deployment commands start the server and the worker with those options", async (t) => {
  const lines = sectionBlocks('Deployment').flatMap((block) => block.lines);
  const runs = lines.filter((line) => /dist\/src\/(server|worker)\.js/.test(line));
  t.ok(runs.length >= 2, `the section starts the server and the worker (${runs.length} commands)`);
  for (const line of runs) {
    const file = /dist\/src\/(?:server|worker)\.js/.exec(line)![0];
    t.equal(optionsBefore(line, file), optionsBefore(scripts.start!, 'dist/src/server.js'), line);
  }
});
