// The webhook receivers (receiver.mjs) seen from the bench: a child process asked over IPC.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface Receiver {
  port: number;
  pid: number;
  count(): Promise<number>;
  /** Arrival times (performance.now() of the receiver, ms) of its n-th deliveries, counting from 1. */
  arrivals(at: number[]): Promise<(number | null)[]>;
  /** Publish-to-arrival times of the stamped events since the last reset, in ms. */
  latencies(): Promise<number[]>;
  reset(): Promise<void>;
  stop(): void;
}

export async function startReceiver(): Promise<Receiver> {
  const child = fork(fileURLToPath(new URL('./receiver.mjs', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // One question at a time: each answer is the next message.
  let queue = Promise.resolve<unknown>(undefined);
  const ask = <T>(message: object): Promise<T> => {
    const answer = queue.then(
      () =>
        new Promise<T>((resolve) => {
          child.once('message', (m) => resolve(m as T));
          child.send(message);
        }),
    );
    queue = answer.catch(() => undefined);
    return answer;
  };
  const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', (m) => resolve(m as { port: number })));
  return {
    port,
    pid: child.pid!,
    count: async () => (await ask<{ count: number }>({ type: 'count' })).count,
    arrivals: async (at) => (await ask<{ times: (number | null)[] }>({ type: 'arrivals', at })).times,
    latencies: async () => (await ask<{ latencies: number[] }>({ type: 'latencies' })).latencies,
    reset: async () => void (await ask({ type: 'reset' })),
    stop: () => void child.kill(),
  };
}
