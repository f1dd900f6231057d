/**
 * Node processes standing in for hosts of a multi-host job (the rendezvous worker,
 * rendezvous-worker.ts), each with a time limit: a worker still running after it is killed and
 * reported as hung, so a rendezvous that never ends, or leaves a socket or timer open, fails the
 * test instead of stalling the run. Not a test file itself.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const WORKER = fileURLToPath(new URL('./rendezvous-worker.js', import.meta.url));

/** How one worker ended. */
export interface HostOutcome {
  /** The exit code (null when killed). */
  readonly exitCode: number | null;
  /** True when it outlived its time limit and was killed. */
  readonly hung: boolean;
  /** The RESULT line's object, if any. */
  readonly result: Record<string, unknown> | null;
  /** The ERROR line's object, if any. */
  readonly error: { code: string; name: string; message: string; details?: Record<string, unknown>; variable?: string; value?: string } | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running worker: `listening` resolves with rank 0's port, `done` when it ends. */
export interface Host {
  readonly listening: Promise<number>;
  readonly done: Promise<HostOutcome>;
}

/** Starts a worker (`args` after the script) with `env` added to this process's, killed after `limitMs`. */
export function startHost(args: readonly string[], env: Record<string, string> = {}, limitMs = 20_000): Host {
  const child = spawn(process.execPath, [WORKER, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let hung = false;
  let onPort: (p: number) => void = () => {};
  let noPort: (e: Error) => void = () => {};
  const listening = new Promise<number>((res, rej) => {
    onPort = res;
    noPort = rej;
  });
  listening.catch(() => {}); // not every worker listens
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (s: string) => {
    stdout += s;
    const m = /^LISTENING (\d+)$/m.exec(stdout);
    if (m) onPort(Number(m[1]));
  });
  child.stderr.on('data', (s: string) => (stderr += s));
  const kill = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, limitMs);
  const done = new Promise<HostOutcome>((resolve) => {
    child.on('close', (exitCode) => {
      clearTimeout(kill);
      noPort(new Error(`the worker ended without listening: ${stdout}${stderr}`));
      const line = (tag: string): Record<string, unknown> | null => {
        const m = new RegExp(`^${tag} (.*)$`, 'm').exec(stdout);
        return m ? (JSON.parse(m[1]!) as Record<string, unknown>) : null;
      };
      resolve({ exitCode, hung, result: line('RESULT'), error: line('ERROR') as HostOutcome['error'], stdout, stderr });
    });
  });
  return { listening, done };
}

/** A rendezvous worker of `tcpRendezvous` options (plus `payloadHex`, `abortAfterMs`). */
export function startRendezvous(spec: Record<string, unknown>, limitMs?: number): Host {
  return startHost(['rdzv', JSON.stringify({ addr: '127.0.0.1', ...spec, ...(spec['rank'] === 0 ? { listenHost: '127.0.0.1' } : {}) })], {}, limitMs);
}

/** A port that was free a moment ago (bound on 127.0.0.1 and released), for a rank 0 started later. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A description of an outcome for assertion messages. */
export function shown(o: HostOutcome): string {
  return `exit ${o.exitCode}${o.hung ? ' (hung, killed)' : ''}\nstdout: ${o.stdout}\nstderr: ${o.stderr}`;
}
