import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { tempDir } from '../helpers/app.js';
import { CLIENT_SECTION, consumerFolder, readmeConsumerSteps } from '../helpers/consumer-build.js';
import { ReaderShell, type Printed } from '../helpers/reader-shell.js';
import { consoleSteps, sectionBlocks, sectionLines, type Block } from '../helpers/readme.js';
import { sleep } from '../helpers/receiver.js';
import { belongsTo, POSTGRES_HOW_TO, postgresDatabase, sqliteDatabase, TEST_DATABASE_URL } from '../helpers/stores.js';

belongsTo('both');

// The walkthroughs of the README and docs/, run as written, one after the other on one database,
// as a reader follows them in two terminals: the server's, where the sh blocks' `export` lines
// and `npm start` lines (re)start the server, and the second one, one bash that keeps its
// variables, its folder and its background jobs from the first console block to the last, where
// every `$ command` runs the moment the one before returns, and must print what the docs show;
// what a receiver started there prints, where the docs show it. Only the ports (3000, and every
// receiver's port the walkthroughs name) are swapped for free ones, the database is a temporary file (and the PostgreSQL one a
// database of its own on TEST_DATABASE_URL's server), and HOME a temporary folder. Keys, secrets
// and event ids differ from run to run: the first time one appears in an output, the docs' value
// is paired with the real one, and later commands get the real one in its place. Timestamps,
// durations and encrypted values are not compared, nor attempt ids and counts (every webhook's
// attempts race for ids, and retries are timed with jitter). After each walkthrough, no attached webhook points anywhere but this machine.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Values that differ from run to run. Paired: keys, key prefixes, secrets, event ids, portal
// link tokens. Ignored: timestamps, durations (a tool's own timing among them) and encrypted values.
const VARYING =
  /(lh_[A-Za-z0-9_-]{43})|(lh_[A-Za-z0-9_-]{8})|(whsec_[A-Za-z0-9+/=]{8,})|(evt_[0-9a-f]{32})|(lhp_[A-Za-z0-9_-]{43})|(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)|(?<="durationMs":)(\d+)|(enc:v1:[A-Za-z0-9+/=]+)|(?<=\[)(\d+(?:\.\d+)?m?s)(?=\]$)/g;
const PAIRED_GROUPS = 5;

/**
 * A line with its attempt ids (a delivery log page's, and its cursor, one of them) and counts of
 * attempts (the move to PostgreSQL's) set aside: retries are timed with jitter.
 */
const withoutAttemptNumbers = (line: string) =>
  (line.startsWith('{"attempts":') ? line.replace(/"(attemptId|next)":\d+/g, '"$1":0') : line)
    .replace(/\bdelivery_attempts: \d+\/\d+/, 'delivery_attempts: 0/0')
    .replace(/\b\d+ delivery_attempts\b/, '0 delivery_attempts');

/** The walkthroughs, in the docs' order (the README, then docs/api.md, then docs/operations.md); each goes on from the ones before it. */
const WALKTHROUGHS = [
  'Quick start',
  'Publishing events and receiving them',
  'Retrying writes safely',
  'Replaying deliveries',
  'When a webhook keeps failing',
  "Rotating a webhook's secret",
  'Only the leads a webhook wants',
  'Accounts for the embedding product',
  CLIENT_SECTION,
  // Run after the others of docs/api.md, wherever the guide puts it, so that the events it
  // publishes do not renumber what they show.
  'Events of one lead, in order',
  'Secrets at rest',
  'Audit log',
  'The portal inside your product',
  'Erasing a lead',
  'Moving a deployment from SQLite to PostgreSQL',
];
const MOVE_SECTION = WALKTHROUGHS.at(-1)!;
/** The PostgreSQL database the docs move to, replaced by one of the tests' own. */
const DOCS_POSTGRES_URL = 'postgres://leadhooks:password@db.internal:5432/leadhooks';

/** How long a command may take to return before the test calls it stuck (a server left in the foreground). */
const COMMAND_TIMEOUT = 120_000;

class Substitutions {
  private readonly pairs = new Map<string, string>();

  /** Whether `actual` is `expected` up to varying values; pairs the new ones. */
  match(expected: string, actual: string): boolean {
    const split = (line: string) => {
      const literals: string[] = [];
      const values: { kind: number; text: string }[] = [];
      let last = 0;
      for (const m of line.matchAll(VARYING)) {
        literals.push(line.slice(last, m.index));
        values.push({ kind: m.slice(1).findIndex((group) => group !== undefined), text: m[0] });
        last = m.index + m[0].length;
      }
      literals.push(line.slice(last));
      return { literals, values };
    };
    const e = split(withoutAttemptNumbers(this.apply(expected)));
    const a = split(withoutAttemptNumbers(actual));
    if (e.literals.join('\0') !== a.literals.join('\0')) return false;
    if (e.values.some((value, i) => value.kind !== a.values[i]!.kind)) return false;
    const found = new Map<string, string>();
    for (const [i, value] of e.values.entries()) {
      if (value.kind >= PAIRED_GROUPS) continue;
      const known = this.pairs.get(value.text) ?? found.get(value.text);
      if (known === undefined) found.set(value.text, a.values[i]!.text);
      else if (known !== a.values[i]!.text && value.text !== a.values[i]!.text) return false;
    }
    for (const [from, to] of found) this.pairs.set(from, to);
    return true;
  }

  /** The README's text with every value seen so far replaced by the real one. */
  apply(text: string): string {
    let out = text;
    for (const [from, to] of this.pairs) out = out.split(from).join(to);
    return out;
  }
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/** A command of the server's terminal in bash, in its own process group (so that `npm start` and its children stop together). */
function bash(command: string, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn('bash', ['-c', command], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
}

function linesOf(child: ChildProcess, into: string[], onLine?: (line: string) => void) {
  let rest = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      into.push(line);
      onLine?.(line);
    }
  });
}

/** Starts the server's command; resolves with its process and output once a line satisfies `ready`. */
async function background(t: Test, command: string, env: NodeJS.ProcessEnv, ready: (line: string) => boolean) {
  const child = bash(command, env);
  const lines: string[] = [];
  let errors = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid!, 'SIGTERM');
    await once(child, 'exit');
  };
  t.teardown(stop);
  await new Promise<void>((resolve, reject) => {
    linesOf(child, lines, (line) => ready(line) && resolve());
    child.once('exit', (code) => reject(new Error(`\`${command}\` exited ${code} before it was ready: ${errors}`)));
  });
  return { lines, stop };
}

// The walkthroughs wait for real retries: "When a webhook keeps failing" alone for over twenty seconds.
t.setTimeout(600_000);

/**
 * Every port of this machine the walkthroughs name besides the API's 3000 and PostgreSQL's 5432:
 * the receivers' (`127.0.0.1:4000`, `/dev/tcp/127.0.0.1/4000`, `receiver.mjs 4000`). Each is
 * swapped for a free one, so that no port the docs name need be free here, whichever they add.
 */
function docsReceiverPorts(): Set<string> {
  const text = WALKTHROUGHS.flatMap((title) => sectionBlocks(title).flatMap((block) => block.lines)).join('\n');
  const named = [...text.matchAll(/(?:127\.0\.0\.1[:/]|localhost:|receiver\.mjs )(\d{4,5})\b/g)].map((m) => m[1]!);
  return new Set(named.filter((port) => port !== '3000' && port !== '5432'));
}

t.test('the walkthroughs name the receivers\' ports that the run swaps', async (t) => {
  t.strictSame([...docsReceiverPorts()].sort(), ['4000', '4001', '4002', '4003', '4004', '4005'], 'all six, 4005 among them');
});

t.test("the docs' walkthroughs, run as written, one after the other", async (t) => {
  const apiPort = await freePort();
  const receiverPorts = new Map<string, number>();
  for (const port of docsReceiverPorts()) receiverPorts.set(port, await freePort());
  const receiverPort = new RegExp(`\\b(${[...receiverPorts.keys()].join('|')})\\b`, 'g');
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: tempDir(t),
    PORT: String(apiPort),
    DATABASE_PATH: join(tempDir(t), 'leadhooks.db'),
    npm_config_update_notifier: 'false',
  };
  // The server's terminal: what its sh blocks export.
  const serverEnv: NodeJS.ProcessEnv = { ...base };
  // The second terminal, where every console block runs.
  const shell = new ReaderShell(t, ROOT, base);
  let postgresUrl: string | undefined;
  const local = (text: string) =>
    text
      .replaceAll('127.0.0.1:3000', `127.0.0.1:${apiPort}`)
      .replace(receiverPort, (port) => String(receiverPorts.get(port)))
      .replace(/(\.\/)?data\/leadhooks\.db/g, base.DATABASE_PATH!)
      .replaceAll(DOCS_POSTGRES_URL, postgresUrl ?? DOCS_POSTGRES_URL);
  const subs = new Substitutions();
  const serverReady = (line: string) => line.includes('"leadhooks is ready"');
  let server: { stop(): Promise<void> } | undefined;
  // The latest receiver started in the background: what it printed, how many of its lines were
  // shown already, and the lines the docs show for its start, checked once it had time to print them.
  let receiver = { printed: undefined as Printed | undefined, shown: 0, started: [] as string[] };

  async function awaitLines(printed: Printed, count: number): Promise<string[]> {
    for (let tries = 0; printed.lines().length < count && tries < 100; tries++) await sleep(100);
    return printed.lines();
  }

  /** What the latest receiver printed when it started, as the docs show it. */
  async function receiverStarted() {
    if (receiver.started.length === 0) return;
    const expected = receiver.started;
    receiver.started = [];
    const printed = (await awaitLines(receiver.printed!, expected.length)).slice(0, expected.length);
    t.ok(printed.length === expected.length && expected.every((line, i) => subs.match(line, printed[i]!)), 'the receiver started', { printed, docs: expected });
  }

  /** A `$` command in the second terminal, typed the moment the one before returned. */
  async function typed(command: string): Promise<{ code: number; printed: Printed }> {
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`\`${command}\` did not return within ${COMMAND_TIMEOUT / 1000} s`)), COMMAND_TIMEOUT);
    });
    try {
      return await Promise.race([shell.run(command), stuck]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function runConsole(block: Block) {
    for (const step of consoleSteps(block)) {
      const command = local(subs.apply(step.command));
      const expected = step.output.map(local);
      if (/&\s*$/.test(command)) {
        // A job left running, as a reader's terminal runs it: the next command is typed at once,
        // and what the job prints on its start is checked when it is read.
        await receiverStarted();
        const ran = await typed(command);
        t.equal(ran.code, 0, `$ ${command}`);
        receiver = { printed: ran.printed, shown: expected.length, started: expected };
        continue;
      }
      // What the walkthrough reads back may lag a delivery in flight, or a retry schedule: a read
      // is retried, 100 ms apart, for 45 seconds (a webhook is disabled 20 seconds after a failure).
      const isRead = !/-X (POST|PATCH|DELETE)|event emit|create|openssl|migrate-to-postgres|^export |^until /.test(command);
      // A start the docs show refused exits 1, as does a refused move; any other command must succeed.
      const refused = /^leadhooks: (configuration error|the PostgreSQL database is not empty)/.test(expected[0] ?? '');
      let actual = { code: 0, lines: [] as string[] };
      let same = false;
      const deadline = Date.now() + 45_000;
      for (let tries = 0; !same && (tries === 0 || (isRead && Date.now() < deadline)); tries++) {
        if (tries > 0) await sleep(100);
        const ran = await typed(command);
        actual = { code: ran.code, lines: ran.printed.lines() };
        same =
          actual.code === (refused ? 1 : 0) &&
          actual.lines.length === expected.length &&
          expected.every((line, i) => subs.match(line, actual.lines[i]!));
      }
      t.ok(same, `$ ${command}`, { printed: actual.lines.join('\n'), exitCode: actual.code, docs: expected.join('\n') });
    }
  }

  /** What the receiver prints: the next lines of the latest receiver, in any order (deliveries race). */
  async function receiverPrinted(block: Block) {
    await receiverStarted();
    const upTo = receiver.shown + block.lines.length;
    const printed = (await awaitLines(receiver.printed!, upTo)).slice(receiver.shown, upTo);
    receiver.shown = upTo;
    t.equal(printed.length, block.lines.length, 'the receiver printed one line per request');
    for (const line of block.lines) {
      const i = printed.findIndex((actual) => subs.match(local(line), actual));
      t.ok(i >= 0, `receiver: ${line}`, { printed });
      if (i >= 0) printed.splice(i, 1);
    }
  }

  /** An sh block is the server's terminal: its `export` lines apply there; its `npm start` line (re)starts the server. */
  async function runSh(block: Block) {
    for (const line of block.lines) {
      const exported = /^export (\w+)=(\S+)$/.exec(line.trim());
      if (exported) serverEnv[exported[1]!] = exported[2]!;
      const command = local(line.replace(/#.*$/, '').trim());
      if (!/(^|\s)npm start$/.test(command)) continue;
      await server?.stop();
      server = await background(t, command, serverEnv, serverReady);
    }
  }

  /** The walkthroughs use loopback receivers only: a webhook left at another host would get every later event. */
  async function attachedElsewhere(title: string) {
    const rows = await sqliteDatabase(base.DATABASE_PATH!).query<{ id: number; url: string }>('SELECT id, url FROM webhooks WHERE deleted_at IS NULL');
    const elsewhere = rows.filter((row) => new URL(row.url).hostname !== '127.0.0.1');
    t.strictSame(elsewhere, [], `after "${title}", every attached webhook points at this machine`);
  }

  for (const title of WALKTHROUGHS) {
    if (title === MOVE_SECTION) {
      if (!TEST_DATABASE_URL) {
        t.comment(`"${title}" not run: it needs a PostgreSQL server (${POSTGRES_HOW_TO})`);
        continue;
      }
      postgresUrl = (await postgresDatabase(t, { empty: true })).env.DATABASE_URL;
      // "the server stopped (Ctrl-C)": nothing is written to the file while it is copied.
      await server?.stop();
    }
    if (title === CLIENT_SECTION) {
      // "In a new folder": the folder its sh blocks make, with the repository's packages (as
      // test/e2e/generated-client.test.ts makes it), its tsconfig.json and its program.
      const steps = readmeConsumerSteps();
      const folder = consumerFolder(join(tempDir(t), 'client'), steps.tsconfig);
      writeFileSync(join(folder, steps.program.file), local(steps.program.text));
      await shell.run(`cd ${folder}`);
    }
    for (const block of sectionBlocks(title)) {
      if (block.lang === 'sh') await runSh(block);
      else if (block.lang === 'console') await runConsole(block);
      else if (block.lang === '' && block.intro.startsWith('The receiver prints')) await receiverPrinted(block);
    }
    await receiverStarted();
    if (title === CLIENT_SECTION) await shell.run(`cd ${ROOT}`);
    if (title !== MOVE_SECTION) await attachedElsewhere(title);
  }
});

t.test("the quick start's start time is the one the bench measured", async (t) => {
  // A start takes what the machine gives it: the README quotes no time of its own, only the
  // bench's start-up measure (its "start to listening" row in BENCHMARKS.md), if any.
  let fenced = false;
  const prose = sectionLines('Quick start').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && !line.startsWith('```');
  });
  const quoted = prose.join('\n').match(/\b\d+(?:[.,]\d+)? ?(?:ms|s)\b/g) ?? [];
  const benchmarks = readFileSync(join(ROOT, 'BENCHMARKS.md'), 'utf8');
  const measured = benchmarks.split('\n').filter((line) => line.includes('start to listening')).join('\n');
  t.ok(measured !== '', 'BENCHMARKS.md has the start-up measure');
  for (const time of quoted) t.ok(measured.includes(time), `the README's "${time}" is a start time the bench measured`);
});
