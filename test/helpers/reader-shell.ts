import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { tempDir } from './temp-dir.js';

// One bash that keeps its state from command to command, as a reader's terminal does: its
// variables, its folder, and the jobs it put in the background. Each command's output, stdout
// and stderr together, goes to a file of its own; a job the command left running goes on writing
// there, so what a background receiver prints is read from the file of the command that started it.

/** What one command printed: read again, it also gives what a job it left running printed since. */
export class Printed {
  constructor(private readonly file: string) {}

  lines(): string[] {
    const text = existsSync(this.file) ? readFileSync(this.file, 'utf8') : '';
    return text === '' ? [] : text.replace(/\n$/, '').split('\n');
  }
}

export class ReaderShell {
  private readonly bash;
  private readonly dir: string;
  private commands = 0;
  private answered: ((line: string) => void) | undefined;
  private failed: ((error: Error) => void) | undefined;
  private errors = '';

  constructor(t: Test, cwd: string, env: NodeJS.ProcessEnv) {
    this.dir = tempDir(t);
    // In a process group of its own, so that its background jobs stop with it.
    this.bash = spawn('bash', [], { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let rest = '';
    this.bash.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      for (const line of lines) this.answered?.(line);
    });
    this.bash.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.errors += chunk));
    this.bash.once('exit', () => this.failed?.(new Error(`bash exited: ${this.errors}`)));
    t.teardown(async () => {
      if (this.bash.exitCode !== null || this.bash.signalCode !== null) return;
      const exited = once(this.bash, 'exit');
      process.kill(-this.bash.pid!, 'SIGTERM');
      await exited;
    });
  }

  /** Runs a command as typed at the prompt; resolves once it returns, with its exit code and output. */
  async run(command: string): Promise<{ code: number; printed: Printed }> {
    const n = ++this.commands;
    const file = join(this.dir, `${n}.out`);
    const done = `command ${n} returned`;
    const answer = new Promise<number>((resolve, reject) => {
      this.answered = (line) => line.startsWith(`${done} `) && resolve(Number(line.slice(done.length + 1)));
      this.failed = reject;
    });
    // Nothing but these lines reaches bash's own stdout: every command's output goes to its file.
    this.bash.stdin.write(`{\n${command}\n} >${file} 2>&1 </dev/null\necho "${done} $?"\n`);
    const code = await answer;
    return { code, printed: new Printed(file) };
  }
}
