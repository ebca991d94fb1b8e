// What every measure is handed: the run's options, the load generator, a scratch directory.
import type { BenchOptions } from './bench-options.js';
import type { LoadGenerator } from './load-generator.js';
import type { Durations } from './measure-load.js';

export interface BenchContext {
  options: BenchOptions;
  generator: LoadGenerator;
  /** Scratch space for this run (database copies, request files), removed at the end. */
  dir: string;
  durations: Durations;
}
