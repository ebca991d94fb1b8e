import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';

// A PostgreSQL cluster of a test's own, to stop and start at will without touching the machine's
// server: initdb and pg_ctl from Debian's PostgreSQL 15, run as the postgres user on a folder it
// owns, listening on a free port of loopback (trust authentication).

const BIN = process.env.POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';

/** Why a private cluster cannot run here (for a test's skip), or false. */
export const privateClusterUnavailable = (): string | false =>
  !existsSync(join(BIN, 'initdb'))
    ? `no initdb in ${BIN} (set POSTGRES_BIN)`
    : process.getuid?.() !== 0
      ? 'a private cluster runs initdb as the postgres user: the tests must run as root'
      : false;

export interface PrivateCluster {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** The cluster's data directory, where a test can read the table files. */
  dataDir: string;
  /** Starts the server, with `settings` (`name=value`) on its command line. */
  start(settings?: string[]): void;
  stop(): void;
  createDatabase(name: string): void;
}

/** A port nothing listens on, on loopback, just now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A new cluster, stopped; stopped and removed at teardown. */
export async function privateCluster(t: Test): Promise<PrivateCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'leadhooks-pg-'));
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
  chownSync(dir, uid, gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const asPostgres = (program: string, args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, program), ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync']);
  let running = false;
  const cluster: PrivateCluster = {
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    dataDir: data,
    start(settings = []) {
      const more = settings.map((setting) => ` -c ${setting}`).join('');
      // -w: returns once the server accepts connections.
      asPostgres('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off${more}`, 'start']);
      running = true;
    },
    stop() {
      asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      running = false;
    },
    createDatabase(name) {
      execFileSync(join(BIN, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name]);
    },
  };
  t.teardown(() => {
    if (running) cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return cluster;
}
