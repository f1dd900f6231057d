/**
 * koffi, the FFI, loaded on first use rather than imported at the top: `import 'cudagraph'` must
 * work (and the CPU model with it) where koffi's native module is missing or cannot load.
 */
import { createRequire } from 'node:module';
import type KoffiModule from 'koffi';

/** The koffi module object. */
export type Koffi = typeof KoffiModule;
/** A library loaded by koffi. */
export type KoffiLibrary = ReturnType<Koffi['load']>;

let cached: Koffi | null = null;
let failure: Error | null = null;

/**
 * koffi itself. @throws Error (with the reason as `cause`) when its native module cannot be
 * loaded; callers turn that into their own typed error.
 */
export function koffi(): Koffi {
  if (cached !== null) return cached;
  if (failure !== null) throw failure;
  try {
    cached = createRequire(import.meta.url)('koffi') as Koffi;
    return cached;
  } catch (e) {
    failure = new Error(`the koffi FFI module could not be loaded (${e instanceof Error ? e.message : String(e)})`, {
      cause: e,
    });
    throw failure;
  }
}
