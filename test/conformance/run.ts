/** Runs a script through a recorder and reports the outcome. */
import type { Recorder } from './recorder.js';
import type { Outcome } from './outcome.js';
import type { Op, Script } from './script.js';

function apply(r: Recorder, o: Op): void {
  switch (o.op) {
    case 'kernel':
      return r.kernel(o.s, o.name, o.blocks, o.threads, o.smem);
    case 'memcpy':
      return r.memcpy(o.s, o.dir, o.size);
    case 'memset':
      return r.memset(o.s, o.size, o.value);
    case 'host':
      return r.host(o.s, o.label);
    case 'record':
      return r.recordEvent(o.s, o.e);
    case 'wait':
      return r.waitEvent(o.s, o.e);
  }
}

/**
 * Records `script` with `r`. The first refused call stops the script; the capture is then ended
 * anyway, and how that went is part of the outcome. The recorder is disposed at the end.
 */
export function runScript(r: Recorder, script: Script): Outcome {
  try {
    r.begin(script.streams, script.before ?? []);
    for (let i = 0; i < script.ops.length; i++) {
      try {
        apply(r, script.ops[i]!);
      } catch (e) {
        const error = r.classify(e);
        let endError = 'ok';
        try {
          r.end();
        } catch (f) {
          endError = r.classify(f);
        }
        return { kind: 'error', at: i, error, endError };
      }
    }
    try {
      return { kind: 'graph', graph: r.end() };
    } catch (e) {
      return { kind: 'error', at: 'end', error: r.classify(e) };
    }
  } finally {
    r.dispose();
  }
}
