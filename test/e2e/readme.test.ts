import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { tempDir } from '../helpers/app.js';
import { consoleSteps, sectionBlocks, type Block } from '../helpers/readme.js';
import { sleep } from '../helpers/receiver.js';

// The README's quick start, publishing walkthrough and safe retries, run as written: its
// `npm start` lines start the server, every `$ command` of its console blocks runs in bash, and
// what each prints must be what the README shows. Only the ports (3000, 4000) are swapped for
// free ones, and the database is a temporary file. Keys, secrets and event ids differ from run to run: the first
// time one appears in an output, the README's value is paired with the real one, and later
// commands get the real one in its place. Timestamps and durations are not compared.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Values that differ from run to run. Paired: keys, key prefixes, secrets, event ids. Ignored:
// timestamps and durations.
const VARYING = /(lh_[A-Za-z0-9_-]{43})|(lh_[A-Za-z0-9_-]{8})|(whsec_[A-Za-z0-9+/=]{8,})|(evt_[0-9a-f]{32})|(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)|(?<="durationMs":)(\d+)/g;
const PAIRED_GROUPS = 4;

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
    const e = split(this.apply(expected));
    const a = split(actual);
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

async function run(command: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const child = bash(command, env);
  let text = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  let errors = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`\`${command}\` exited ${code}: ${errors}`);
  return text.replace(/\n$/, '').split('\n');
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

t.test("the README's quick start, publishing walkthrough and safe retries, run as written", async (t) => {
  const [apiPort, receiverPort] = [await freePort(), await freePort()];
  const ports = (text: string) => text.replaceAll('127.0.0.1:3000', `127.0.0.1:${apiPort}`).replaceAll('4000', String(receiverPort));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(apiPort),
    DATABASE_PATH: join(tempDir(t), 'readme.db'),
  };
  const subs = new Substitutions();
  const serverReady = (line: string) => line.includes('"leadhooks is ready"');

  let receiverOutput: string[] = [];

  async function runConsole(block: Block) {
    for (const step of consoleSteps(block)) {
      const command = ports(subs.apply(step.command));
      const expected = step.output.map(ports);
      const exported = /^export (\w+)=(\S+)$/.exec(command);
      if (exported) {
        env[exported[1]!] = exported[2]!;
        continue;
      }
      if (expected[0]?.startsWith('receiver listening on')) {
        const receiver = await background(t, command, env, () => true);
        t.ok(subs.match(expected[0], receiver.lines[0]!), `${command}\n  printed ${receiver.lines[0]}`);
        receiverOutput = receiver.lines;
        continue;
      }
      // What the walkthrough reads back may lag a delivery in flight: a read is retried briefly.
      const isRead = !/-X (POST|PATCH|DELETE)|event emit|create/.test(command);
      let actual: string[] = [];
      let same = false;
      for (let tries = 0; !same && (tries === 0 || (isRead && tries <= 50)); tries++) {
        if (tries > 0) await sleep(100);
        actual = await run(command, env);
        same = actual.length === expected.length && expected.every((line, i) => subs.match(line, actual[i]!));
      }
      t.ok(same, `$ ${command}`, { printed: actual.join('\n'), readme: expected.join('\n') });
    }
  }

  /** The `npm start` line of a section's sh block, with the `export` lines before it applied. */
  function startCommand(blocks: Block[]): string {
    for (const line of blocks.filter((b) => b.lang === 'sh').flatMap((b) => b.lines)) {
      const exported = /^export (\w+)=(\S+)$/.exec(line.trim());
      if (exported) env[exported[1]!] = exported[2]!;
      const command = line.replace(/#.*$/, '').trim();
      if (/(^|\s)npm start$/.test(command)) return command;
    }
    throw new Error('no npm start line');
  }

  const quickStart = sectionBlocks('Quick start');
  const first = await background(t, startCommand(quickStart), env, serverReady);
  for (const block of quickStart.filter((b) => b.lang === 'console')) await runConsole(block);
  await first.stop();

  const walkthrough = sectionBlocks('Publishing events and receiving them');
  await background(t, startCommand(walkthrough), env, serverReady);
  for (const block of walkthrough.filter((b) => b.lang === 'console')) await runConsole(block);

  // What the receiver printed, shown in one or more plain blocks ("The receiver prints...:"), in order.
  const printedBlocks = walkthrough.filter((b) => b.lang === '' && b.intro.startsWith('The receiver prints'));
  t.ok(printedBlocks.length > 0, 'the README shows what the receiver prints');
  const printed = printedBlocks.flatMap((b) => b.lines);
  // After its "listening" line (shown in the walkthrough's console block), one line per request.
  const deliveries = () => receiverOutput.slice(1);
  for (let tries = 0; deliveries().length < printed.length && tries < 100; tries++) await sleep(50);
  t.equal(deliveries().length, printed.length, 'the receiver printed one line per request');
  printed.forEach((line, i) => t.ok(subs.match(line, deliveries()[i] ?? ''), `receiver: ${deliveries()[i]}`));

  // "Retrying writes safely" goes on from the walkthrough, on the same server.
  for (const block of sectionBlocks('Retrying writes safely').filter((b) => b.lang === 'console')) await runConsole(block);
});
