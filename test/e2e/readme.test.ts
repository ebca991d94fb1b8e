import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { tempDir } from '../helpers/app.js';
import { consoleSteps, sectionBlocks, type Block } from '../helpers/readme.js';
import { sleep } from '../helpers/receiver.js';

// The README's walkthroughs, run as written, one after the other on one database, as a reader
// follows them: its `npm start` lines (re)start the server, every `$ command` of its console blocks
// runs in bash, and what each prints must be what the README shows; what a receiver prints, where
// the README shows it. Only the ports (3000, 4000 to 4004) are swapped for free ones, the database
// is a temporary file, and HOME a temporary folder. Keys, secrets and event ids differ from run to
// run: the first time one appears in an output, the README's value is paired with the real one,
// and later commands get the real one in its place. Timestamps, durations and encrypted values
// are not compared, nor attempt ids (every webhook's attempts race for them).

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Values that differ from run to run. Paired: keys, key prefixes, secrets, event ids. Ignored:
// timestamps, durations and encrypted values.
const VARYING =
  /(lh_[A-Za-z0-9_-]{43})|(lh_[A-Za-z0-9_-]{8})|(whsec_[A-Za-z0-9+/=]{8,})|(evt_[0-9a-f]{32})|(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)|(?<="durationMs":)(\d+)|(enc:v1:[A-Za-z0-9+/=]+)/g;
const PAIRED_GROUPS = 4;

/** A delivery log page with its attempt ids (and its cursor, one of them) set aside. */
const withoutAttemptIds = (line: string) => (line.startsWith('{"attempts":') ? line.replace(/"(attemptId|next)":\d+/g, '"$1":0') : line);

/** The walkthroughs, in the README's order; each goes on from the ones before it. */
const WALKTHROUGHS = [
  'Quick start',
  'Publishing events and receiving them',
  'Retrying writes safely',
  'Replaying deliveries',
  'When a webhook keeps failing',
  "Rotating a webhook's secret",
  'Secrets at rest',
];

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
    const e = split(withoutAttemptIds(this.apply(expected)));
    const a = split(withoutAttemptIds(actual));
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

/** A command in bash, in its own process group (so that `npm start` and its children stop together). */
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

/** A command's exit code and what it printed, stdout and stderr together, as a terminal shows them. */
async function run(command: string, env: NodeJS.ProcessEnv): Promise<{ code: number; lines: string[] }> {
  const child = bash(command, env);
  let text = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  const [code] = await once(child, 'exit');
  return { code, lines: text === '' ? [] : text.replace(/\n$/, '').split('\n') };
}

/** Starts a long-running command; resolves with its process and output once a line satisfies `ready`. */
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

t.test("the README's walkthroughs, run as written, one after the other", async (t) => {
  const apiPort = await freePort();
  const receiverPorts = new Map<string, number>();
  for (const port of ['4000', '4001', '4002', '4003', '4004']) receiverPorts.set(port, await freePort());
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: tempDir(t),
    PORT: String(apiPort),
    DATABASE_PATH: join(tempDir(t), 'leadhooks.db'),
  };
  const local = (text: string) =>
    text
      .replaceAll('127.0.0.1:3000', `127.0.0.1:${apiPort}`)
      .replace(/\b400[0-4]\b/g, (port) => String(receiverPorts.get(port)))
      .replaceAll('data/leadhooks.db', env.DATABASE_PATH!);
  const subs = new Substitutions();
  const serverReady = (line: string) => line.includes('"leadhooks is ready"');
  let server: { stop(): Promise<void> } | undefined;
  // The output of the latest receiver started, and how many of its lines were shown already.
  let receiver = { lines: [] as string[], shown: 0 };

  async function runConsole(block: Block) {
    for (const step of consoleSteps(block)) {
      const command = local(subs.apply(step.command));
      const expected = step.output.map(local);
      const exported = /^export (\w+)=(\S+)$/.exec(command);
      if (exported) {
        env[exported[1]!] = exported[2]!;
        continue;
      }
      if (expected[0]?.startsWith('receiver listening on')) {
        // Started with `&` in the README, to keep the terminal: here it runs in a process of its own anyway.
        const started = await background(t, command.replace(/\s*&$/, ''), env, () => true);
        t.ok(subs.match(expected[0], started.lines[0]!), `${command}\n  printed ${started.lines[0]}`);
        receiver = { lines: started.lines, shown: 1 };
        continue;
      }
      // What the walkthrough reads back may lag a delivery in flight, or a retry schedule: a read
      // is retried, 100 ms apart, for 45 seconds (a webhook is disabled 20 seconds after a failure).
      const isRead = !/-X (POST|PATCH|DELETE)|event emit|create|openssl/.test(command);
      // A start the README shows refused exits 1; any other command must succeed.
      const refused = expected[0]?.startsWith('leadhooks: configuration error') ?? false;
      let actual = { code: 0, lines: [] as string[] };
      let same = false;
      const deadline = Date.now() + 45_000;
      for (let tries = 0; !same && (tries === 0 || (isRead && Date.now() < deadline)); tries++) {
        if (tries > 0) await sleep(100);
        actual = await run(command, env);
        same =
          actual.code === (refused ? 1 : 0) &&
          actual.lines.length === expected.length &&
          expected.every((line, i) => subs.match(line, actual.lines[i]!));
      }
      t.ok(same, `$ ${command}`, { printed: actual.lines.join('\n'), exitCode: actual.code, readme: expected.join('\n') });
    }
  }

  /** What the receiver prints: the next lines of the latest receiver, in any order (deliveries race). */
  async function receiverPrinted(block: Block) {
    const upTo = receiver.shown + block.lines.length;
    for (let tries = 0; receiver.lines.length < upTo && tries < 300; tries++) await sleep(100);
    const printed = receiver.lines.slice(receiver.shown, upTo);
    receiver.shown = upTo;
    t.equal(printed.length, block.lines.length, 'the receiver printed one line per request');
    for (const line of block.lines) {
      const i = printed.findIndex((actual) => subs.match(local(line), actual));
      t.ok(i >= 0, `receiver: ${line}`, { printed });
      if (i >= 0) printed.splice(i, 1);
    }
  }

  /** An sh block's `export` lines apply; its `npm start` line (re)starts the server. */
  async function runSh(block: Block) {
    for (const line of block.lines) {
      const exported = /^export (\w+)=(\S+)$/.exec(line.trim());
      if (exported) env[exported[1]!] = exported[2]!;
      const command = line.replace(/#.*$/, '').trim();
      if (!/(^|\s)npm start$/.test(command)) continue;
      await server?.stop();
      server = await background(t, command, env, serverReady);
    }
  }

  for (const title of WALKTHROUGHS) {
    for (const block of sectionBlocks(title)) {
      if (block.lang === 'sh') await runSh(block);
      else if (block.lang === 'console') await runConsole(block);
      else if (block.lang === '' && block.intro.startsWith('The receiver prints')) await receiverPrinted(block);
    }
  }
});
