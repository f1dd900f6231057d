/**
 * Writing pieces of text (a graph's JSON or DOT, graph-json-stream.ts, dot-stream.ts) to a file or
 * a Writable, waiting whenever the Writable asks to (`write` returned false), so that however large
 * the text, only a few pieces are queued at once.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/**
 * What a writer needs of a Writable (a `stream.Writable`, `process.stdout`, a socket): written
 * out here, so that the library's typings need no Node typings.
 */
export interface TextSink {
  write(chunk: string): boolean;
  on(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown;
  off(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown;
}

/** Where a writer sends its text: a file path (created or replaced) or a Writable (left open). */
export type TextTarget = string | TextSink;

/** What a writer of bytes (the binary graph form) needs of a Writable: a `TextSink` that takes bytes. */
export interface ByteSink {
  write(chunk: Uint8Array): boolean;
  on(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown;
  off(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown;
}

/** Where a writer sends bytes: a file path (created or replaced) or a Writable (left open). */
export type ByteTarget = string | ByteSink;

/** Resolves when `sink` drains, closes or fails (the caller then checks for the failure), leaving no listener behind. */
function drained(sink: TextSink | ByteSink): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      sink.off('drain', done);
      sink.off('close', done);
      sink.off('error', done);
      resolve();
    };
    sink.on('drain', done);
    sink.on('close', done);
    sink.on('error', done);
  });
}

/**
 * Writes every piece of `chunks` to `target`. A path is written through a file stream that is
 * closed at the end (and destroyed on an error, which is passed on); a Writable is not ended, so
 * more may follow (stdout, a socket). Resolves with the number of characters (or bytes) written.
 */
export async function writeChunks(chunks: Iterable<string>, target: TextTarget): Promise<number>;
export async function writeChunks(chunks: Iterable<Uint8Array>, target: ByteTarget): Promise<number>;
export async function writeChunks(chunks: Iterable<string | Uint8Array>, target: TextTarget | ByteTarget): Promise<number> {
  const file = typeof target === 'string' ? createWriteStream(target) : null;
  const sink = (file ?? target) as { write(chunk: string | Uint8Array): boolean } & TextSink;
  let chars = 0;
  // An error of the sink (a full disk, a closed pipe) ends the loop at the next wait.
  let failure: unknown = null;
  const onError = (e: unknown): void => {
    failure ??= e;
  };
  sink.on('error', onError);
  try {
    for (const piece of chunks) {
      if (failure !== null) throw failure;
      chars += piece.length;
      if (!sink.write(piece)) await drained(sink);
    }
    if (failure !== null) throw failure;
    if (file !== null) {
      file.end();
      await once(file, 'close');
      if (failure !== null) throw failure;
    }
    return chars;
  } catch (e) {
    if (file !== null && !file.closed) {
      // Wait for the close: a file still being opened would otherwise appear after the caller removed it.
      const closed = new Promise<void>((resolve) => file.once('close', () => resolve()));
      file.destroy();
      await closed;
    }
    throw e;
  } finally {
    sink.off('error', onError);
  }
}
