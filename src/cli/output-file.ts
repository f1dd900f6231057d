/**
 * Output files written whole or not at all: into a new file beside the output, renamed over it
 * once complete, removed when the write fails or a signal ends the command.
 */
import { accessSync, chmodSync, constants, createWriteStream, lstatSync, mkdirSync, openSync, realpathSync, renameSync, rmSync, statSync, type WriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { writeChunks } from '../model/chunk-sink.js';
import { UsageError, fileErrorReason } from './usage-error.js';

/** The signals that end a command (Ctrl-C, `kill`, a closed terminal) and must not leave a temporary file. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Temporary files of the writes in progress; the signal listeners are there while any is. */
const temps = new Set<string>();
let listening = false;
/** The signal that last removed the temporary files (where the program itself handles it and goes on). */
let interruptedBy: NodeJS.Signals | null = null;

/**
 * Removes the temporary files, then lets the signal end the process as it would have (re-raised
 * with no listener of ours left), unless the program listens for it itself.
 */
function onSignal(signal: NodeJS.Signals): void {
  interruptedBy = signal;
  for (const t of temps) rmSync(t, { force: true });
  temps.clear();
  stopListening();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function stopListening(): void {
  for (const s of SIGNALS) process.off(s, onSignal);
  listening = false;
}

/** Resolves after the event loop's next poll for I/O, where the signals caught meanwhile are dispatched. */
function nextPoll(): Promise<void> {
  // An immediate runs after this turn's poll; one it schedules, after the next turn's.
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * Listens for the signals, before a temporary file exists: with no listener a signal ends the
 * process at once, wherever it is, and a file made just before would be left behind.
 */
function listen(): void {
  if (listening) return;
  listening = true;
  for (const s of SIGNALS) process.on(s, onSignal);
}

/**
 * Ends a write. A signal caught while the thread was busy (a synchronous write) is dispatched only
 * at the next poll: the listeners stay until then, or the signal would be lost with them and the
 * command go on as if never interrupted.
 */
async function untrack(temp: string): Promise<void> {
  await nextPoll();
  temps.delete(temp);
  if (temps.size === 0 && listening) stopListening();
}

const errno = (e: unknown): string | undefined => (e as NodeJS.ErrnoException).code;

/** How to write `path`: in place (`direct`), or through a new file renamed over `target`. */
type Plan = { readonly direct: true } | { readonly direct: false; readonly target: string; readonly mode?: number };

function plan(path: string): Plan {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    if (errno(e) !== 'ENOENT') throw e;
  }
  if (st !== undefined) {
    // A device, a FIFO, a link to a terminal or a pipe: nothing to replace; write to it.
    if (!st.isFile()) return { direct: true };
    // A file the user may not write is refused, as writing it in place would be (a rename would replace it).
    accessSync(path, constants.W_OK);
    // Through a symbolic link, its target is replaced, with its permissions.
    return { direct: false, target: realpathSync(path), mode: st.mode & 0o7777 };
  }
  // A link to nothing: written through, which creates its target, as a plain write does.
  try {
    if (lstatSync(path).isSymbolicLink()) return { direct: true };
  } catch (e) {
    if (errno(e) !== 'ENOENT') throw e;
  }
  return { direct: false, target: path };
}

/** A temporary file made by `createTemp`: its path, and its descriptor, open for writing. */
interface Temp {
  readonly path: string;
  readonly fd: number;
}

/**
 * A new, empty file of an unpredictable name in `folder` (created exclusively: never a file or
 * link planted there), kept open, or null where the folder cannot take one (not writable,
 * read-only): then the output is written in place. The write goes through this descriptor, never
 * through the path: an open by path still pending in the thread pool when a signal removes the
 * file would make it again just before the process ends.
 */
function createTemp(folder: string): Temp | null {
  for (let attempt = 0; ; attempt++) {
    const temp = join(folder, `.cudagraph-${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
    try {
      return { path: temp, fd: openSync(temp, 'wx', 0o666) };
    } catch (e) {
      const code = errno(e);
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return null;
      if (code !== 'EEXIST' || attempt >= 8) throw e;
    }
  }
}

/**
 * Ends the file stream `file` and resolves once its descriptor is closed; rejects with the first
 * error the stream met (`failure()`), then or before.
 */
async function closeFile(file: WriteStream, failure: () => unknown): Promise<void> {
  // A stream that failed may have closed already, and would never emit 'close' again.
  if (!file.closed) {
    await new Promise<void>((resolve) => {
      file.once('close', () => resolve());
      file.end();
    });
  }
  const e = failure();
  if (e !== null) throw e;
}

/**
 * Writes the output file `path` (its folder created) through `write`, which is handed where to
 * write: a stream on a new file beside it (not to be ended: `writeOutput` ends it), renamed over
 * it once complete and removed if `write` fails or a signal ends the command (Ctrl-C, SIGTERM,
 * SIGHUP), so a failed run (a full disk, a file-size limit) leaves neither a half-written file nor
 * a changed one. A symbolic link is written through (its target is replaced, with its
 * permissions); other hard links to the file keep its old contents. Written in place instead,
 * `write` then handed the path: a path that is not a regular file (a device, a pipe), a link to
 * nothing, and a file in a folder where no new file can be made. A file the user may not write is
 * refused.
 * @throws UsageError `cannot write <path>: <why>` when it cannot.
 */
export async function writeOutput<T>(path: string, write: (to: string | WriteStream) => T | Promise<T>): Promise<T> {
  try {
    mkdirSync(dirname(path), { recursive: true });
    const how = plan(path);
    if (how.direct) return await write(path);
    listen();
    let made: Temp | null = null;
    try {
      made = createTemp(dirname(how.target));
    } finally {
      if (made === null && temps.size === 0) stopListening();
    }
    if (made === null) return await write(path);
    const temp = made.path;
    // Synchronously after its creation: no signal is dispatched in between.
    temps.add(temp);
    const file = createWriteStream(temp, { fd: made.fd });
    // Kept from the start, so that an error with no writer waiting (at the close) is not thrown unhandled.
    let failure: unknown = null;
    file.on('error', (e) => {
      failure ??= e;
    });
    try {
      const result = await write(file);
      await closeFile(file, () => failure);
      // Removed by a signal that the program handles itself: the write is cancelled, the output left as it was.
      if (!temps.has(temp)) throw new Error(`interrupted by ${interruptedBy ?? 'a signal'}`);
      if (how.mode !== undefined) chmodSync(temp, how.mode);
      renameSync(temp, how.target);
      return result;
    } catch (e) {
      if (!file.closed) {
        const closed = new Promise<void>((resolve) => file.once('close', () => resolve()));
        file.destroy();
        await closed;
      }
      rmSync(temp, { force: true });
      throw e;
    } finally {
      await untrack(temp);
    }
  } catch (e) {
    throw new UsageError(`cannot write ${path}: ${fileErrorReason(e)}`, { cause: e });
  }
}

/**
 * Writes `data` to `path`, creating its folder, whole or not at all (`writeOutput`); asynchronously,
 * so that a Ctrl-C during the write ends the command at once.
 * @throws UsageError when it cannot.
 */
export async function writeOutputFile(path: string, data: string | Uint8Array): Promise<void> {
  await writeOutput<unknown>(path, (to) => {
    if (typeof to === 'string') return writeFile(to, data);
    return typeof data === 'string' ? writeChunks([data], to) : writeChunks([data], to);
  });
}
