/**
 * The orchestrator's side of a worker: a long-lived child process spoken to one line at a time.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { formatCommand, parseReady, parseReply, type ReadyLine, type RowCommand, type RowReply } from './protocol.js';

/** How to start one implementation's worker. */
export interface WorkerSpec {
  readonly id: string;
  readonly label: string;
  readonly command: string;
  readonly args: readonly string[];
  /** Variables added to the orchestrator's environment. */
  readonly env?: Readonly<Record<string, string>>;
}

/** Keeps the last `max` characters of a stream, for error messages. */
class Tail {
  private text = '';
  constructor(private readonly max: number) {}
  add(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.max);
  }
  toString(): string {
    return this.text.trim();
  }
}

/** A running worker. `start` resolves once its ready line has been read. */
export class WorkerProcess {
  private readonly lines: string[] = [];
  private waiter: ((line: string | null) => void) | null = null;
  private closed = false;
  private readonly stderr = new Tail(2000);

  private constructor(
    readonly spec: WorkerSpec,
    private readonly child: ChildProcessWithoutNullStreams,
  ) {
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => this.push(line));
    child.stderr.setEncoding('utf8').on('data', (d: string) => this.stderr.add(d));
    child.on('close', () => {
      this.closed = true;
      this.push(null);
    });
    child.on('error', (e) => {
      this.stderr.add(`\n${e.message}`);
      this.closed = true;
      this.push(null);
    });
    // A worker that dies must not take the orchestrator down with EPIPE.
    child.stdin.on('error', () => {});
  }

  private push(line: string | null): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w(line);
    } else if (line !== null) {
      this.lines.push(line);
    }
  }

  private nextLine(timeoutMs: number): Promise<string | null> {
    const queued = this.lines.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolveLine, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        reject(new Error(`${this.spec.id}: no answer within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.waiter = (line) => {
        clearTimeout(timer);
        resolveLine(line);
      };
    });
  }

  private died(what: string): Error {
    const err = this.stderr.toString();
    return new Error(`${this.spec.id}: ${what}${err ? `; stderr: ${err.slice(-600)}` : ''}`);
  }

  /**
   * Starts the worker and waits for its ready line. Resolves to the worker and its ready line
   * (which may say `ready: false`, with the reason; the process is then gone).
   */
  static async start(spec: WorkerSpec, timeoutMs: number): Promise<{ worker: WorkerProcess; ready: ReadyLine }> {
    const env = spec.env === undefined ? process.env : { ...process.env, ...spec.env };
    const child = spawn(spec.command, [...spec.args], { stdio: ['pipe', 'pipe', 'pipe'], env });
    const worker = new WorkerProcess(spec, child);
    let line: string | null;
    try {
      line = await worker.nextLine(timeoutMs);
    } catch (e) {
      worker.kill();
      throw e;
    }
    if (line === null) throw worker.died('exited before it was ready');
    try {
      return { worker, ready: parseReady(line) };
    } catch (e) {
      worker.kill();
      throw worker.died(`bad first line (${(e as Error).message})`);
    }
  }

  /** Sends one command and resolves to the parsed reply; rejects if the worker dies or times out. */
  async request(cmd: RowCommand, timeoutMs: number): Promise<RowReply> {
    if (this.closed) throw this.died('has exited');
    this.child.stdin.write(formatCommand(cmd) + '\n');
    let line: string | null;
    try {
      line = await this.nextLine(timeoutMs);
    } catch (e) {
      this.kill(); // a late answer would be read as the answer to the next command
      throw e;
    }
    if (line === null) throw this.died(`exited while running "${formatCommand(cmd)}"`);
    return parseReply(line, cmd);
  }

  get alive(): boolean {
    return !this.closed;
  }

  /** Asks the worker to quit and waits up to `timeoutMs` for it to exit, then kills it. */
  async quit(timeoutMs = 5000): Promise<void> {
    if (this.closed) return;
    this.child.stdin.end('quit\n');
    const exited = new Promise<void>((r) => this.child.once('close', () => r()));
    const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), timeoutMs).unref());
    if ((await Promise.race([exited, timer])) === 'late') this.kill();
  }

  kill(): void {
    if (!this.closed) this.child.kill('SIGKILL');
  }
}
