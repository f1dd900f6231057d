/**
 * `cudagraph serve` as a child process on 127.0.0.1 for the serve benchmarks: started with the
 * given arguments, awaited until `/health` answers, stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** A running server. */
export interface BenchServer {
  readonly url: string;
  /** SIGTERM, then the exit awaited. */
  stop(): Promise<void>;
}

/** Resolves once `url/health` answers 200. @throws after `ms` without. */
export async function waitHealthy(url: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`bench:serve: ${url} did not become healthy in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Starts `cudagraph serve --port <port> <args>` from the package at `root` and waits for it (up to 120 s: NVRTC compiles at start). */
export async function startServer(root: string, port: number, args: readonly string[]): Promise<BenchServer> {
  const child: ChildProcess = spawn(process.execPath, [join(root, 'bin/cudagraph.js'), 'serve', '--port', String(port), ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await Promise.race([waitHealthy(url, 120_000), exited.then(() => Promise.reject(new Error(`bench:serve: cudagraph serve ${args.join(' ')} exited before it was healthy`)))]);
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, stop };
}
