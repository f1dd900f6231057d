/** Modules and functions (`cuModule*`, `cuFunc*`). */
import { driverSymbol, hasDriverSymbol, koffi } from '../sys.js';
import { check, cudaError } from './check.js';
import { CU } from '../layouts.js';
import { u64, u64b, takeHandle } from './scratch.js';

const LOG_BYTES = 16 * 1024;

function cString(buf: Uint8Array): string {
  const end = buf.indexOf(0);
  return new TextDecoder().decode(buf.subarray(0, end < 0 ? buf.length : end)).trim();
}

/**
 * Loads a PTX, cubin or fatbin image into the current context (`cuModuleLoadDataEx`), asking the
 * JIT for its error and info logs so a PTX that does not compile says why.
 */
export function moduleLoadData(op: string, image: Uint8Array): bigint {
  const errorLog = new Uint8Array(LOG_BYTES);
  const infoLog = new Uint8Array(LOG_BYTES);
  const options = new Int32Array([
    CU.JIT_ERROR_LOG_BUFFER,
    CU.JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    CU.JIT_INFO_LOG_BUFFER,
    CU.JIT_INFO_LOG_BUFFER_SIZE_BYTES,
  ]);
  // Option values are pointer-sized: buffers by address, sizes by value cast to a pointer.
  const values = new BigUint64Array([
    koffi().address(errorLog),
    BigInt(LOG_BYTES),
    koffi().address(infoLog),
    BigInt(LOG_BYTES),
  ]);
  const rc = driverSymbol(op, 'cuModuleLoadDataEx')(u64, image, options.length, options, values);
  if (rc !== 0) {
    const log = cString(errorLog) || cString(infoLog);
    throw cudaError(rc, op, 'cuModuleLoadDataEx', log ? `JIT log:\n${log}` : undefined);
  }
  return takeHandle();
}

/** Unloads a module (`cuModuleUnload`); returns the CUresult for the cleanup path. */
export function moduleUnload(op: string, module: bigint): number {
  return driverSymbol(op, 'cuModuleUnload')(module);
}

/** A function of a module by name (`cuModuleGetFunction`). */
export function moduleGetFunction(op: string, module: bigint, name: string): bigint {
  const rc = driverSymbol(op, 'cuModuleGetFunction')(u64, module, name);
  if (rc !== 0) throw cudaError(rc, op, 'cuModuleGetFunction', `no kernel named '${name}' in the module`);
  return takeHandle();
}

/** The name of a function (`cuFuncGetName`) or of a library kernel (`cuKernelGetName`). */
export function functionName(op: string, fn: bigint, isKernelHandle = false): string {
  const call = isKernelHandle ? 'cuKernelGetName' : 'cuFuncGetName';
  check(driverSymbol(op, call)(u64b, fn), op, call);
  const p = u64b[0]!;
  u64b[0] = 0n;
  return p === 0n ? '' : koffi().decode.string(p);
}

/**
 * The sizes in bytes of a kernel's parameters (`cuFuncGetParamInfo`, CUDA 12.4+), or null when
 * this driver cannot say. The driver answers CUDA_ERROR_INVALID_VALUE past the last parameter.
 */
export function functionParamSizes(op: string, fn: bigint): number[] | null {
  if (!hasDriverSymbol('cuFuncGetParamInfo')) return null;
  const get = driverSymbol(op, 'cuFuncGetParamInfo');
  const sizes: number[] = [];
  for (let i = 0; i < 4096; i++) {
    const rc = get(fn, i, u64, u64b);
    if (rc === 1) break; // CUDA_ERROR_INVALID_VALUE: no parameter i
    if (rc !== 0) return null;
    sizes.push(Number(u64b[0]!));
  }
  return sizes;
}
