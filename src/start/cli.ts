// The `leadhooks` command once src/cli.ts found the Node supported: `serve` and `worker` start
// those processes, every other command goes to src/cli/run-cli.ts.
import { runCli } from '../cli/run-cli.js';
import { ConfigError, loadTracingConfig } from '../config.js';
import { startTracing, stopTracing } from '../tracing.js';

const [command] = process.argv.slice(2);
// Each process module starts itself on import.
if (command === 'serve') await import('./server.js');
else if (command === 'worker') await import('./worker.js');
else {
  // Traced like the server: `event emit` publishes.
  await startTracing(loadTracingConfig());
  await runCli(process.argv.slice(2), {
    // Given to the CLI like its output, so that tests can give their own; read only by src/config.ts.
    env: process.env,
    out: (line) => console.log(line),
    err: (line) => console.error(line),
  })
    .then(
      (code) => {
        process.exitCode = code;
      },
      (error: unknown) => {
        console.error(error instanceof ConfigError ? `leadhooks: configuration error: ${error.message}` : error);
        process.exitCode = 1;
      },
    )
    .finally(stopTracing);
}
