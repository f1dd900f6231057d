/** NVRTC, the run-time CUDA C++ compiler: source in, PTX or cubin out, the log kept for errors. */
import { nvrtcSymbol, koffi } from '../sys.js';
import { NvrtcError } from '../../errors/cuda-error.js';

function nvrtcErrorName(result: number): string {
  try {
    return nvrtcSymbol('nvrtcGetErrorString', 'nvrtcGetErrorString')(result);
  } catch {
    return `NVRTC_ERROR(${result})`;
  }
}

function fail(op: string, call: string, result: number, log = ''): NvrtcError {
  const name = nvrtcErrorName(result);
  return new NvrtcError(op, name, result, `${call} failed${log ? '; compiler log:' : ''}`, log);
}

/** NVRTC's version, e.g. `{ major: 13, minor: 0 }`. */
export function nvrtcVersion(op: string): { major: number; minor: number } {
  const major = new Int32Array(1);
  const minor = new Int32Array(1);
  const rc = nvrtcSymbol(op, 'nvrtcVersion')(major, minor);
  if (rc !== 0) throw fail(op, 'nvrtcVersion', rc);
  return { major: major[0]!, minor: minor[0]! };
}

/** What a compilation produced. */
export interface CompileOutput {
  /** PTX text (NUL-terminated bytes) or a cubin. */
  readonly image: Uint8Array;
  readonly kind: 'ptx' | 'cubin';
  /** The compiler's log (warnings); empty when silent. */
  readonly log: string;
  /** Each requested name expression → its lowered (mangled) name. */
  readonly lowered: ReadonlyMap<string, string>;
}

function readBytes(op: string, prog: bigint, what: 'PTX' | 'CUBIN' | 'ProgramLog'): Uint8Array {
  const size = new BigUint64Array(1);
  const sizeCall = what === 'PTX' ? 'nvrtcGetPTXSize' : what === 'CUBIN' ? 'nvrtcGetCUBINSize' : 'nvrtcGetProgramLogSize';
  const getCall = what === 'PTX' ? 'nvrtcGetPTX' : what === 'CUBIN' ? 'nvrtcGetCUBIN' : 'nvrtcGetProgramLog';
  let rc = nvrtcSymbol(op, sizeCall)(prog, size);
  if (rc !== 0) throw fail(op, sizeCall, rc);
  const out = new Uint8Array(Number(size[0]!));
  if (out.length === 0) return out;
  rc = nvrtcSymbol(op, getCall)(prog, out);
  if (rc !== 0) throw fail(op, getCall, rc);
  return out;
}

function text(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
}

/**
 * Compiles CUDA C++ `source`. `wantCubin` asks for a cubin (a real `sm_XX` architecture in the
 * options); otherwise PTX. @throws NvrtcError with the compiler log when compilation fails.
 */
export function nvrtcCompile(
  op: string,
  source: string,
  name: string,
  options: readonly string[],
  nameExpressions: readonly string[],
  wantCubin: boolean,
): CompileOutput {
  const progSlot = new BigUint64Array(1);
  let rc = nvrtcSymbol(op, 'nvrtcCreateProgram')(progSlot, source, name, 0, null, null);
  if (rc !== 0) throw fail(op, 'nvrtcCreateProgram', rc);
  const prog = progSlot[0]!;
  try {
    for (const expr of nameExpressions) {
      rc = nvrtcSymbol(op, 'nvrtcAddNameExpression')(prog, expr);
      if (rc !== 0) throw fail(op, `nvrtcAddNameExpression('${expr}')`, rc);
    }
    rc = nvrtcSymbol(op, 'nvrtcCompileProgram')(prog, options.length, options.length ? options : null);
    const log = text(readBytes(op, prog, 'ProgramLog')).trim();
    if (rc !== 0) throw fail(op, 'nvrtcCompileProgram', rc, log);
    const lowered = new Map<string, string>();
    for (const expr of nameExpressions) {
      const slot = new BigUint64Array(1);
      rc = nvrtcSymbol(op, 'nvrtcGetLoweredName')(prog, expr, slot);
      if (rc !== 0) throw fail(op, `nvrtcGetLoweredName('${expr}')`, rc);
      lowered.set(expr, decodeCString(slot[0]!));
    }
    const image = readBytes(op, prog, wantCubin ? 'CUBIN' : 'PTX');
    return { image, kind: wantCubin ? 'cubin' : 'ptx', log, lowered };
  } finally {
    nvrtcSymbol(op, 'nvrtcDestroyProgram')(progSlot);
  }
}

function decodeCString(ptr: bigint): string {
  return ptr === 0n ? '' : koffi().decode.string(ptr);
}
