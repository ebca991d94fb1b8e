import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { runCli } from '../../src/cli/run-cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { testDatabase } from '../helpers/stores.js';

// `leadhooks event emit`: a lead's numbers that a double does not hold (a 19-digit id, 1e400)
// are stored, and so delivered, as written, from --data and from --file alike.

const DATA = '{"crmId":1234567890123456789,"x":1e400}';

t.test('event emit keeps the numbers of --data and --file as written', async (t) => {
  const db = await testDatabase(t);
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const code = await runCli(argv, { env: db.env, out: (line) => out.push(line), err: () => {} });
    return { code, out: out.join('\n') };
  };
  await run('client', 'create', 'Acme', '--json');
  const single = await run('event', 'emit', '1', 'lead_create', '--data', DATA, '--json');
  t.equal(single.code, 0);
  const file = join(tempDir(t), 'leads.jsonl');
  writeFileSync(file, `{"clientId":1,"type":"lead_create","data":${DATA}}\n`);
  t.equal((await run('event', 'emit', '--file', file, '--json')).code, 0);
  const rows = await db.query<{ payload: string }>('SELECT payload FROM events');
  t.equal(rows.length, 2);
  for (const row of rows) t.ok(row.payload.includes(`"data":${DATA}`), row.payload);
});
