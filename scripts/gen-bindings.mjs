#!/usr/bin/env node
// Generates the typed declarations of every C entry point cudagraph binds: for each library, the
// TypeScript interface (`DriverApi`, `NvrtcApi`, `NcclApi`), its symbol type, and the koffi
// prototype of every symbol (`DRIVER_PROTOTYPES`, ...), from two inputs:
//   - a hand-kept list of entry points, one name a line (src/driver/entry-points.txt,
//     src/driver/nvrtc-entry-points.txt, src/nccl/entry-points.txt);
//   - the library's C header: cuda.h, nvrtc.h, nccl.h;
//   - for the driver, src/driver/newer-declarations.h: the declarations of entry points newer than
//     the cuda.h the bindings are generated from, as NVIDIA documents them, each with the release
//     that added it. They are read after the header, with its types; where the header declares the
//     same function, the two must agree. A driver older than the release lacks the symbol, and the
//     call is refused as "this driver predates the call" (CUDA error 801).
// The outputs are committed (src/driver/api.generated.ts, src/driver/nvrtc-api.generated.ts,
// src/nccl/api.generated.ts), so machines without the headers build the package unchanged; a CPU
// test regenerates them into a temporary folder and compares. Run it after editing a list, or when
// a header changes:
//   node scripts/gen-bindings.mjs [--cuda-header F] [--nvrtc-header F] [--nccl-header F] [--out-dir D]
// Headers: cuda.h from $CUDA_HOME/include, then /usr/local/cuda/include; nvrtc.h beside it, then
// the Python wheels' nvidia/cu13/include; nccl.h from $NCCL_HOME/include, /usr/include,
// /usr/local/include, then Python's site-packages/nvidia/nccl/include. A header that is not found
// keeps the committed output (the script says so, and fails if the list names an entry point that
// output lacks). --out-dir D writes D/src/... instead of the working tree.
//
// How a header is read: a small C preprocessor (#if/#ifdef/#elif/#else/#endif with `defined` and
// integer expressions, object- and function-like #define with ## pasting, #undef) runs over it for
// the target cudagraph builds for, GCC on 64-bit Linux, with nothing else defined; in particular
// neither CUDA_API_PER_THREAD_DEFAULT_STREAM nor __CUDA_API_VERSION_INTERNAL, so cuda.h's
// `#define cuStreamBeginCapture __CUDA_API_PTSZ(cuStreamBeginCapture_v2)` maps the public name to
// cuStreamBeginCapture_v2 (the default-stream build, no _ptsz/_ptds) and the legacy declarations
// kept for the driver's own build are skipped. Then its typedefs and function declarations are
// parsed from the active text, macro-expanded as a compiler sees them. An entry point is a name
// from the list, expanded by the header's macros (the public name, or the exact versioned
// symbol), and must be declared under the symbol it expands to.
//
// The conventions of the emitted declarations (those of the hand-written binding they replace):
//   - opaque handles (a typedef of a pointer to an incomplete struct: CUstream, nvrtcProgram,
//     ncclComm_t) and function pointers (CUhostFn) are `void *`, the TS handle type (a bigint or null);
//   - every other pointer, out-parameters included, is `void *` (`const void *` where C points to
//     const), the TS host-pointer type (a TypedArray, a bigint address, or null); except
//     `const char *`, an input string (`const char *`, TS string);
//   - CUdeviceptr is `uint64_t`, TS DevicePtr;
//   - enums (CUresult, nvrtcResult, ncclResult_t and the rest) are `int`, TS number;
//   - `int` and `unsigned int` keep their names; other integer types are spelled with their
//     stdint width on LP64 (`unsigned char` uint8_t, `unsigned long long` uint64_t); `size_t`
//     stays `size_t`. 64-bit integers are TS bigint; the rest, size_t counts included, numbers;
//   - a `const char *` result is a TS string, or null when C returns NULL.
// Deliberate departures from that, kept from the hand-written binding, are the RULES below: each
// names the library, the entry point or parameter, and why.
import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join, dirname, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// ---------------------------------------------------------------------------------------------
// The three libraries.

/**
 * Per library: where its list and output live, the names it emits, the TS types of its
 * conventions, and its rules. `types` names the TS types of the conventions; `typesFrom` is the
 * module that declares them (the hand-written sys.ts beside the output).
 */
export const LIBRARIES = {
  driver: {
    header: 'cuda.h',
    list: 'src/driver/entry-points.txt',
    newer: 'src/driver/newer-declarations.h',
    out: 'src/driver/api.generated.ts',
    api: 'DriverApi',
    symbol: 'DriverSymbol',
    prototypes: 'DRIVER_PROTOTYPES',
    typesFrom: './sys.js',
    types: { handle: 'Handle', pointer: 'HostPtr', device: 'DevicePtr' },
    docApi:
      "The CUDA driver entry points cudagraph binds, each under the versioned symbol cuda.h's macros map its public name to (the default-stream build, no `_ptsz`/`_ptds`).",
    docSymbol: 'A driver symbol cudagraph binds.',
    docPrototypes:
      'The koffi prototype of every bound symbol. Parameter names follow cuda.h; types follow the conventions in the file comment of sys.ts.',
  },
  nvrtc: {
    header: 'nvrtc.h',
    list: 'src/driver/nvrtc-entry-points.txt',
    out: 'src/driver/nvrtc-api.generated.ts',
    api: 'NvrtcApi',
    symbol: 'NvrtcSymbol',
    prototypes: 'NVRTC_PROTOTYPES',
    typesFrom: './sys.js',
    types: { handle: 'Handle', pointer: 'HostPtr', device: 'DevicePtr' },
    docApi: 'The NVRTC entry points cudagraph binds (nvrtc.h; NVRTC has no versioned symbols).',
    docSymbol: 'An NVRTC symbol cudagraph binds.',
    docPrototypes: 'The koffi prototype of every bound NVRTC symbol; parameter names follow nvrtc.h.',
  },
  nccl: {
    header: 'nccl.h',
    list: 'src/nccl/entry-points.txt',
    out: 'src/nccl/api.generated.ts',
    api: 'NcclApi',
    symbol: 'NcclSymbol',
    prototypes: 'NCCL_PROTOTYPES',
    typesFrom: './sys.js',
    types: { handle: 'NcclHandle', pointer: 'NcclHostPtr', device: 'bigint' },
    docApi: 'The NCCL entry points cudagraph binds (nccl.h; NCCL has no versioned symbols).',
    docSymbol: 'An NCCL symbol cudagraph binds.',
    docPrototypes: 'The koffi prototype of every bound NCCL symbol; parameter names follow nccl.h.',
  },
};

/**
 * The deliberate departures from the literal translation, each kept from the hand-written binding.
 * `param` rules match a parameter by name (in the listed entry points, or in all of the library's
 * when `entry` is '*'); `result` rules replace an entry point's result type; `type` rules map a C
 * type name wherever it appears.
 */
export const RULES = [
  {
    library: 'driver',
    type: 'CUdeviceptr',
    koffi: 'uint64_t',
    ts: 'device',
    why: 'a device address is a 64-bit integer (the JS DevicePtr, a bigint), not memory koffi could point into',
  },
  {
    library: 'driver',
    entry: 'cuLaunchHostFunc',
    param: 'userData',
    ts: 'handle',
    why: 'userData is an opaque value the driver hands back to the host function, never memory it reads',
  },
  {
    library: 'nvrtc',
    entry: 'nvrtcCompileProgram',
    param: 'options',
    koffi: 'const char **',
    ts: 'readonly string[] | null',
    why: 'the options are passed as a JS string array, which koffi marshals to the C array of strings',
  },
  {
    library: 'nvrtc',
    entry: 'nvrtcGetErrorString',
    result: true,
    ts: 'string',
    why: 'nvrtcGetErrorString returns a string for every result, unknown ones included, never NULL',
  },
  {
    library: 'nccl',
    type: 'ncclUniqueId',
    koffi: 'cudagraph_ncclUniqueId',
    ts: 'NcclUniqueIdStruct',
    why: 'ncclCommInitRank takes the 128-byte id BY VALUE: a koffi struct that nccl/sys.ts declares (UNIQUE_ID_TYPE; koffi type names are process-wide, hence the prefix)',
  },
  {
    library: 'nccl',
    entry: '*',
    param: ['sendbuff', 'recvbuff', 'buff'],
    koffi: 'uint64_t',
    ts: 'device',
    why: 'the buffers of a collective are device memory: cudagraph passes CUdeviceptr values, the same 64-bit argument as void * in the x86-64 and AArch64 C ABIs',
  },
];

/** Types a header uses without declaring them (its own #includes are not read). */
const EXTERNAL_TYPES = {
  size_t: { kind: 'int', name: 'size_t', bits: 64 },
  uint8_t: { kind: 'int', name: 'uint8_t', bits: 8 },
  int8_t: { kind: 'int', name: 'int8_t', bits: 8 },
  uint16_t: { kind: 'int', name: 'uint16_t', bits: 16 },
  int16_t: { kind: 'int', name: 'int16_t', bits: 16 },
  uint32_t: { kind: 'int', name: 'uint32_t', bits: 32 },
  int32_t: { kind: 'int', name: 'int32_t', bits: 32 },
  uint64_t: { kind: 'int', name: 'uint64_t', bits: 64 },
  int64_t: { kind: 'int', name: 'int64_t', bits: 64 },
  uintptr_t: { kind: 'int', name: 'uintptr_t', bits: 64 },
  // nccl.h includes cuda_runtime.h for it: `typedef struct CUstream_st *cudaStream_t`.
  cudaStream_t: { kind: 'handle' },
};

/** C's integer types as koffi spells them (LP64: long is 64-bit). */
const C_INTEGERS = {
  char: { name: 'char', bits: 8 },
  'signed char': { name: 'int8_t', bits: 8 },
  'unsigned char': { name: 'uint8_t', bits: 8 },
  short: { name: 'int16_t', bits: 16 },
  'unsigned short': { name: 'uint16_t', bits: 16 },
  int: { name: 'int', bits: 32 },
  'unsigned int': { name: 'unsigned int', bits: 32 },
  long: { name: 'int64_t', bits: 64 },
  'unsigned long': { name: 'uint64_t', bits: 64 },
  'long long': { name: 'int64_t', bits: 64 },
  'unsigned long long': { name: 'uint64_t', bits: 64 },
};

/** What the preprocessor is told about the target: GCC, 64-bit Linux. */
const TARGET_MACROS = '#define __GNUC__ 12\n#define __LP64__ 1\n#define __x86_64__ 1\n#define __linux__ 1\n#define __STDC__ 1\n';

// ---------------------------------------------------------------------------------------------
// Tokens and the preprocessor.

const TOKEN =
  /\s*(?:([A-Za-z_]\w*)|(\.?\d(?:[eEpP][+-]|[\w.])*)|("(?:\\.|[^"\\\n])*")|('(?:\\.|[^'\\\n])+')|(##|\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[^\s]))/y;

/** The C tokens of one line of text. */
export function tokenize(line) {
  const out = [];
  TOKEN.lastIndex = 0;
  for (let m; TOKEN.lastIndex < line.length && (m = TOKEN.exec(line)); ) out.push(m[0].trim());
  return out.filter((t) => t !== '');
}

const isIdent = (t) => /^[A-Za-z_]\w*$/.test(t);

/** Removes comments (keeping the newlines inside them) after joining continued lines. */
function stripComments(text) {
  text = text.replace(/\\\r?\n/g, '');
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += ' ' + text.slice(i, stop).replace(/[^\n]/g, '');
      i = stop;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '"' || c === "'") {
      // A literal ends on its line; a lone quote (an apostrophe in #error text) is kept as is.
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      const stop = text[j] === c ? j + 1 : i + 1;
      out += text.slice(i, stop);
      i = stop;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/**
 * Runs the preprocessor over `text`. Returns the macro-expanded tokens of the active lines and the
 * macros defined at the end.
 */
export function preprocess(text, file = 'header') {
  /** name → { params: string[] | null, body: string[] } */
  const macros = new Map();
  const tokens = [];
  const stack = []; // { active, taken, parent }
  const active = () => stack.length === 0 || stack[stack.length - 1].active;
  const lines = (TARGET_MACROS + stripComments(text)).split('\n');
  const offset = TARGET_MACROS.split('\n').length - 1;
  let pending = []; // tokens of active text not yet expanded (a macro call may span lines)

  const flush = () => {
    if (pending.length) tokens.push(...expand(pending, macros));
    pending = [];
  };
  lines.forEach((line, n) => {
    const where = `${file}:${n + 1 - offset}`;
    const d = /^\s*#\s*(\w+)?(.*)$/.exec(line);
    if (!d) {
      if (active()) pending.push(...tokenize(line));
      return;
    }
    const [, directive = '', rest] = d;
    if (directive === 'if' || directive === 'ifdef' || directive === 'ifndef') {
      const parent = active();
      let cond = false;
      if (parent) {
        const t = tokenize(rest);
        if (directive === 'ifdef') cond = macros.has(t[0]);
        else if (directive === 'ifndef') cond = !macros.has(t[0]);
        else cond = evaluate(t, macros, where) !== 0;
      }
      stack.push({ active: parent && cond, taken: cond, parent });
      return;
    }
    if (directive === 'elif' || directive === 'else') {
      const top = stack[stack.length - 1];
      if (!top) throw new Error(`${where}: #${directive} without #if`);
      if (top.taken || !top.parent) top.active = false;
      else {
        const cond = directive === 'else' || evaluate(tokenize(rest), macros, where) !== 0;
        top.active = cond;
        top.taken = cond;
      }
      return;
    }
    if (directive === 'endif') {
      if (!stack.pop()) throw new Error(`${where}: #endif without #if`);
      return;
    }
    if (!active()) return;
    flush();
    if (directive === 'define') {
      const m = /^\s*([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$/.exec(rest);
      if (!m) throw new Error(`${where}: cannot read #define${rest}`);
      const params = m[2] === undefined ? null : m[3].split(',').map((p) => p.trim()).filter((p) => p !== '');
      macros.set(m[1], { params, body: tokenize(m[4]) });
    } else if (directive === 'undef') {
      macros.delete(tokenize(rest)[0]);
    } else if (directive === 'error') {
      throw new Error(`${where}: #error${rest}`);
    }
    // #include, #pragma and the rest change nothing that is read here.
  });
  flush();
  if (stack.length) throw new Error(`${file}: ${stack.length} #if without #endif`);
  return { tokens, macros };
}

/** Macro-expands `input` (object-like and function-like macros, # and ##), `hide` being expanded already. */
export function expand(input, macros, hide = new Set()) {
  const out = [];
  for (let i = 0; i < input.length; i++) {
    const t = input[i];
    const m = isIdent(t) && !hide.has(t) ? macros.get(t) : undefined;
    if (m === undefined) {
      out.push(t);
      continue;
    }
    if (m.params === null) {
      out.push(...expand(paste(m.body), macros, new Set([...hide, t])));
      continue;
    }
    if (input[i + 1] !== '(') {
      out.push(t);
      continue;
    }
    // Collect the arguments: split at depth-0 commas up to the matching parenthesis.
    const args = [[]];
    let depth = 0;
    let j = i + 2;
    for (; j < input.length; j++) {
      const a = input[j];
      if (a === '(') depth++;
      else if (a === ')' && depth-- === 0) break;
      if (a === ',' && depth === 0) args.push([]);
      else args[args.length - 1].push(a);
    }
    if (j >= input.length) throw new Error(`unterminated call of macro ${t}`);
    if (m.params.length === 0 && args.length === 1 && args[0].length === 0) args.pop();
    const body = [];
    m.body.forEach((b, k) => {
      const p = m.params.indexOf(b);
      if (p < 0) {
        body.push(b);
      } else if (m.body[k - 1] === '#') {
        body.pop();
        body.push(JSON.stringify((args[p] ?? []).join(' ')));
      } else if (m.body[k - 1] === '##' || m.body[k + 1] === '##') {
        body.push(...(args[p] ?? []));
      } else {
        body.push(...expand(args[p] ?? [], macros, hide));
      }
    });
    out.push(...expand(paste(body), macros, new Set([...hide, t])));
    i = j;
  }
  return out;
}

/** Applies the ## operators of a macro body. */
function paste(body) {
  const out = [];
  for (let k = 0; k < body.length; k++) {
    if (body[k] === '##' && out.length && k + 1 < body.length) out.push(out.pop() + body[++k]);
    else out.push(body[k]);
  }
  return out;
}

/** Evaluates an #if expression: `defined`, integers, identifiers (0 when undefined), C operators. */
function evaluate(input, macros, where) {
  const resolved = [];
  for (let i = 0; i < input.length; i++) {
    if (input[i] !== 'defined') {
      resolved.push(input[i]);
      continue;
    }
    const name = input[i + 1] === '(' ? input[i + 2] : input[i + 1];
    i += input[i + 1] === '(' ? 3 : 1;
    resolved.push(macros.has(name) ? '1' : '0');
  }
  const t = expand(resolved, macros).map((x) => (isIdent(x) ? '0' : x));
  let k = 0;
  const BINARY = [['||'], ['&&'], ['|'], ['^'], ['&'], ['==', '!='], ['<', '>', '<=', '>='], ['<<', '>>'], ['+', '-'], ['*', '/', '%']];
  const apply = (op, a, b) =>
    ({
      '||': a || b ? 1 : 0,
      '&&': a && b ? 1 : 0,
      '|': a | b,
      '^': a ^ b,
      '&': a & b,
      '==': a === b ? 1 : 0,
      '!=': a !== b ? 1 : 0,
      '<': a < b ? 1 : 0,
      '>': a > b ? 1 : 0,
      '<=': a <= b ? 1 : 0,
      '>=': a >= b ? 1 : 0,
      '<<': a << b,
      '>>': a >> b,
      '+': a + b,
      '-': a - b,
      '*': a * b,
      '/': b === 0 ? 0 : Math.trunc(a / b),
      '%': b === 0 ? 0 : a % b,
    })[op];
  const unary = () => {
    const x = t[k++];
    if (x === '!') return unary() ? 0 : 1;
    if (x === '-') return -unary();
    if (x === '+') return unary();
    if (x === '~') return ~unary();
    if (x === '(') {
      const v = ternary();
      if (t[k++] !== ')') throw new Error(`${where}: ) expected in #if`);
      return v;
    }
    if (x !== undefined && /^\d/.test(x)) return Number(x.replace(/[uUlL]+$/, ''));
    throw new Error(`${where}: cannot evaluate #if ${input.join(' ')}`);
  };
  const binary = (level) => {
    if (level === BINARY.length) return unary();
    let a = binary(level + 1);
    while (BINARY[level].includes(t[k])) {
      const op = t[k++];
      a = apply(op, a, binary(level + 1));
    }
    return a;
  };
  const ternary = () => {
    const c = binary(0);
    if (t[k] !== '?') return c;
    k++;
    const a = ternary();
    if (t[k++] !== ':') throw new Error(`${where}: : expected in #if`);
    const b = ternary();
    return c ? a : b;
  };
  const v = ternary();
  if (k !== t.length) throw new Error(`${where}: cannot evaluate #if ${input.join(' ')}`);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Declarations.

const QUALIFIERS = new Set(['const', 'volatile', 'restrict', '__restrict', '__restrict__', 'extern', 'static', 'inline']);
const BUILTIN_WORDS = new Set(['void', 'char', 'short', 'int', 'long', 'signed', 'unsigned', 'float', 'double', '_Bool']);

/**
 * A C type: `base` (a builtin spelling such as 'unsigned int', a typedef name, or 'struct X' /
 * 'enum X'), whether the base is const, and its pointers, innermost first, each with its own const.
 */
function readType(specifiers, declarator = []) {
  let baseConst = false;
  const words = [];
  for (const s of specifiers) {
    if (s === 'const') baseConst = true;
    else if (!QUALIFIERS.has(s)) words.push(s);
  }
  const pointers = [];
  for (const d of declarator) {
    if (d === '*') pointers.push({ const: false });
    else if (d === 'const' && pointers.length) pointers[pointers.length - 1].const = true;
  }
  let base;
  if (words[0] === 'struct' || words[0] === 'union' || words[0] === 'enum') base = `${words[0]} ${words[1]}`;
  else if (words.every((w) => BUILTIN_WORDS.has(w))) base = normalizeBuiltin(words);
  else if (words.length === 1) base = words[0];
  else throw new Error(`cannot read the type ${[...specifiers, ...declarator].join(' ')}`);
  return { base, baseConst, pointers };
}

function normalizeBuiltin(words) {
  const unsigned = words.includes('unsigned');
  const longs = words.filter((w) => w === 'long').length;
  const core = words.find((w) => ['void', 'char', 'short', 'float', 'double', '_Bool'].includes(w));
  let name;
  if (core === 'char') name = unsigned ? 'unsigned char' : words.includes('signed') ? 'signed char' : 'char';
  else if (core !== undefined) name = unsigned ? `unsigned ${core}` : core;
  else name = `${unsigned ? 'unsigned ' : ''}${['int', 'long', 'long long'][longs]}`;
  return name;
}

/** Splits a parameter (or typedef body) into specifiers, declarator tokens and the declared name. */
function splitDeclarator(tokens) {
  const t = tokens.filter((x) => x !== '');
  // A function pointer: RET (*name)(args) / RET (CC *name)(args).
  const open = t.indexOf('(');
  if (open >= 0 && t.slice(open).includes('*')) {
    const close = t.indexOf(')', open);
    const inner = t.slice(open + 1, close);
    const name = inner.filter(isIdent).pop() ?? null;
    return { fnptr: true, specifiers: t.slice(0, open), declarator: [], name };
  }
  // Arrays decay to pointers.
  const arrays = t.filter((x) => x === '[').length;
  const flat = t.slice(0, t.includes('[') ? t.indexOf('[') : t.length);
  let name = null;
  const last = flat[flat.length - 1];
  const typeWords = flat.filter((x) => isIdent(x) && !QUALIFIERS.has(x));
  if (isIdent(last) && !QUALIFIERS.has(last) && !BUILTIN_WORDS.has(last) && typeWords.length >= 2 && !/^(struct|union|enum)$/.test(flat[flat.length - 2] ?? '')) {
    name = last;
    flat.pop();
  }
  const star = flat.indexOf('*');
  const specifiers = star < 0 ? flat : flat.slice(0, star);
  const declarator = star < 0 ? [] : flat.slice(star);
  for (let a = 0; a < arrays; a++) declarator.push('*');
  return { fnptr: false, specifiers, declarator, name };
}

/** Splits `tokens` at depth-0 commas. */
function splitTopLevel(tokens) {
  const parts = [[]];
  let depth = 0;
  for (const x of tokens) {
    if (x === '(' || x === '[' || x === '{') depth++;
    if (x === ')' || x === ']' || x === '}') depth--;
    if (x === ',' && depth === 0) parts.push([]);
    else parts[parts.length - 1].push(x);
  }
  return parts;
}

/** Drops `__attribute__((...))`, `__declspec(...)` and `extern "C"`. */
function dropAttributes(tokens) {
  const out = [];
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i] === '__attribute__' || tokens[i] === '__declspec') {
      let depth = 0;
      for (i++; i < tokens.length; i++) {
        if (tokens[i] === '(') depth++;
        else if (tokens[i] === ')' && --depth === 0) break;
      }
      continue;
    }
    if (tokens[i] === 'extern' && tokens[i + 1]?.startsWith('"')) {
      i++;
      continue;
    }
    out.push(tokens[i]);
  }
  return out;
}

/**
 * The typedefs and function declarations of preprocessed `tokens`.
 * typedefs: name → { kind: 'enum' } | { kind: 'struct', tag } | { kind: 'handle' } (a pointer to
 *   an incomplete struct) | { kind: 'fnptr' } | { kind: 'alias', type }; functions: symbol →
 *   { result, params: [{ name, type, text }], text }.
 */
export function parseDeclarations(tokens) {
  const typedefs = new Map();
  const functions = new Map();
  const complete = new Set(); // 'struct X' with a body
  const pointerTypedefs = []; // [name, 'struct X'] resolved once every body is known
  const statements = [];
  let current = [];
  let depth = 0;
  let functionBody = false;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t === '{') {
      if (depth === 0) functionBody = current[current.length - 1] === ')';
      depth++;
    }
    current.push(t);
    if (t === '}' && --depth === 0 && functionBody) {
      current = []; // an inline function's definition: nothing is bound from it
      functionBody = false;
    }
    if (t === ';' && depth === 0) {
      statements.push(dropAttributes(current.slice(0, -1)));
      current = [];
    }
  }
  for (const s of statements) {
    if (s.length === 0) continue;
    const body = s.indexOf('{');
    // `struct X { ... };`: X is complete (a typedef of one is read by readTypedef).
    if (body === 2 && /^(struct|union)$/.test(s[0]) && isIdent(s[1])) complete.add(`${s[0]} ${s[1]}`);
    if (s[0] === 'typedef') {
      readTypedef(s.slice(1), typedefs, complete, pointerTypedefs);
      continue;
    }
    const open = s.indexOf('(');
    if (open <= 0 || !isIdent(s[open - 1]) || s[s.length - 1] !== ')' || body >= 0) continue;
    const name = s[open - 1];
    const head = s.slice(0, open - 1);
    const star = head.includes('*') ? head.indexOf('*') : head.length;
    const result = readType(head.slice(0, star), head.slice(star));
    const paramTokens = s.slice(open + 1, -1);
    const params =
      paramTokens.length === 0 || (paramTokens.length === 1 && paramTokens[0] === 'void')
        ? []
        : splitTopLevel(paramTokens).map((p, k) => {
            const d = splitDeclarator(p);
            const type = d.fnptr ? { base: '(function pointer)', baseConst: false, pointers: [{ const: false }] } : readType(d.specifiers, d.declarator);
            return { name: d.name ?? `arg${k}`, type, text: cText(p) };
          });
    const decl = { name, result, params, resultText: cText(head), paramsText: params.map((p) => p.text).join(', ') };
    decl.text = cDeclaration(decl, name);
    const prior = functions.get(name);
    if (prior !== undefined && prior.text !== decl.text) throw new Error(`${name} is declared twice, differently:\n  ${prior.text}\n  ${decl.text}`);
    functions.set(name, decl);
  }
  for (const [name, tag] of pointerTypedefs) typedefs.set(name, complete.has(tag) ? { kind: 'alias', type: { base: tag, baseConst: false, pointers: [{ const: false }] } } : { kind: 'handle' });
  return { typedefs, functions };
}

function readTypedef(s, typedefs, complete, pointerTypedefs) {
  const kw = s[0];
  if (kw === 'enum' || kw === 'struct' || kw === 'union') {
    let i = 1;
    const tag = isIdent(s[i]) ? s[i++] : null;
    let rest = s.slice(i);
    if (rest[0] === '{') {
      let depth = 0;
      let j = 0;
      for (; j < rest.length; j++) {
        if (rest[j] === '{') depth++;
        else if (rest[j] === '}' && --depth === 0) break;
      }
      rest = rest.slice(j + 1);
      if (tag && kw !== 'enum') complete.add(`${kw} ${tag}`);
    }
    const tagName = tag ? `${kw} ${tag}` : null;
    for (const d of splitTopLevel(rest)) {
      const name = d.filter(isIdent).filter((x) => !QUALIFIERS.has(x)).pop();
      if (!name) continue;
      const stars = d.filter((x) => x === '*').length;
      if (kw === 'enum') typedefs.set(name, stars ? { kind: 'alias', type: { base: 'int', baseConst: false, pointers: [{ const: false }] } } : { kind: 'enum' });
      else if (stars === 0) typedefs.set(name, { kind: 'struct', tag: tagName ?? name });
      else pointerTypedefs.push([name, tagName ?? `${kw} ${name}`]);
    }
    if (tag && kw === 'enum') typedefs.set(`enum ${tag}`, { kind: 'enum' });
    if (tag && kw !== 'enum') typedefs.set(`${kw} ${tag}`, { kind: 'struct', tag: `${kw} ${tag}` });
    return;
  }
  for (const d of splitTopLevel(s)) {
    const parts = splitDeclarator(d);
    if (parts.name === null) continue;
    if (parts.fnptr) typedefs.set(parts.name, { kind: 'fnptr' });
    else typedefs.set(parts.name, { kind: 'alias', type: readType(parts.specifiers, parts.declarator) });
  }
}

/** A function declaration as C is written: `const char *f(int x)`, `CUresult g(void *p)`. */
function cDeclaration(decl, name) {
  return `${decl.resultText}${decl.resultText.endsWith('*') ? '' : ' '}${name}(${decl.paramsText})`;
}

/** C tokens joined as C is written: `const char *name`, `CUstream hStream`. */
function cText(tokens) {
  return tokens
    .join(' ')
    .replace(/\s*\*\s*/g, ' *')
    .replace(/\* (?=\*)/g, '*')
    .replace(/\s*([()[\],])\s*/g, '$1')
    .replace(/,/g, ', ')
    .replace(/\*\s+const\b/g, '*const')
    .trim();
}

// ---------------------------------------------------------------------------------------------
// Mapping declarations to koffi and TypeScript.

/**
 * Resolves `type` through the typedefs: { kind: 'int', name, bits } | { kind: 'float', name } |
 * { kind: 'void' } | { kind: 'enum' } | { kind: 'handle' } | { kind: 'struct', name } |
 * { kind: 'pointer', pointeeConst, char } plus `typedef`, the outermost typedef name met.
 */
function resolveType(type, typedefs, where) {
  let { base, baseConst, pointers } = type;
  const seen = [];
  for (;;) {
    if (pointers.length > 0) {
      // A pointer: only its pointee's constness and whether it points at char matter.
      const pointeeConst = pointers.length >= 2 ? pointers[pointers.length - 2].const : baseConst;
      const char = pointers.length === 1 && (base === 'char' || EXTERNAL_TYPES[base]?.name === 'char');
      checkDeclared(base, typedefs, where);
      return { kind: 'pointer', pointeeConst, char, typedef: seen[0] };
    }
    if (C_INTEGERS[base]) return { kind: 'int', ...C_INTEGERS[base], typedef: seen[0] };
    if (base === 'float' || base === 'double') return { kind: 'float', name: base, typedef: seen[0] };
    if (base === 'void') return { kind: 'void' };
    const t = typedefs.get(base) ?? EXTERNAL_TYPES[base];
    if (t === undefined) throw new Error(`${where}: the type ${base} is not declared in the header`);
    seen.push(base);
    if (t.kind === 'alias') {
      baseConst = t.type.baseConst;
      pointers = t.type.pointers;
      base = t.type.base;
      continue;
    }
    if (t.kind === 'struct') return { kind: 'struct', name: base, typedef: seen[0] };
    return { ...t, typedef: seen[0] };
  }
}

/** A pointee must be a type the header declares (catches a misread declaration). */
function checkDeclared(base, typedefs, where) {
  if (C_INTEGERS[base] || base === 'void' || base === 'float' || base === 'double' || base === '(function pointer)') return;
  if (typedefs.has(base) || EXTERNAL_TYPES[base] || /^(struct|union) /.test(base)) return;
  throw new Error(`${where}: the type ${base} is not declared in the header`);
}

/** The rules applied by the current `generate` (a rule for a listed entry point must apply). */
const matched = new Set();

function ruleFor(library, entry, param) {
  return RULES.find(
    (r) =>
      r.library === library &&
      r.param !== undefined &&
      (r.entry === '*' || r.entry === entry) &&
      (Array.isArray(r.param) ? r.param.includes(param) : r.param === param),
  );
}

/** The koffi and TS types of one C type (a parameter, or with `result` the result). */
function mapType(lib, libName, entry, type, typedefs, where, paramName) {
  const r = resolveType(type, typedefs, where);
  const ts = (t) => lib.types[t] ?? t;
  const typeRule = RULES.find((x) => x.library === libName && x.type !== undefined && (x.type === type.base || x.type === r.typedef) && type.pointers.length === 0);
  const paramRule = paramName === undefined ? undefined : ruleFor(libName, entry, paramName);
  const rule = paramRule ?? typeRule;
  if (rule) {
    matched.add(rule);
    return { koffi: rule.koffi ?? defaultKoffi(r), ts: ts(rule.ts) };
  }
  switch (r.kind) {
    case 'pointer':
      if (r.char && r.pointeeConst) return { koffi: 'const char *', ts: paramName === undefined ? 'string | null' : 'string' };
      return { koffi: r.pointeeConst ? 'const void *' : 'void *', ts: ts('pointer') };
    case 'handle':
    case 'fnptr':
      return { koffi: 'void *', ts: ts('handle') };
    case 'enum':
      return { koffi: 'int', ts: 'number' };
    case 'int':
      return { koffi: r.name, ts: r.bits === 64 && r.name !== 'size_t' ? 'bigint' : 'number' };
    case 'float':
      return { koffi: r.name, ts: 'number' };
    case 'void':
      return { koffi: 'void', ts: 'void' };
    default:
      throw new Error(`${where}: ${type.base} is a struct passed by value; add a rule for it to scripts/gen-bindings.mjs`);
  }
}

function defaultKoffi(r) {
  if (r.kind === 'int' || r.kind === 'float') return r.name;
  if (r.kind === 'enum') return 'int';
  return 'void *';
}

/** The symbol a name maps to: the name expanded by the header's macros (one identifier expected). */
export function resolveSymbol(name, macros) {
  const out = expand([name], macros);
  if (out.length !== 1 || !isIdent(out[0])) throw new Error(`${name} expands to \`${out.join(' ')}\`, not a symbol`);
  return out[0];
}

const TS_RESERVED = new Set(
  'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await'.split(
    ' ',
  ),
);

/** Binds one listed entry point: its symbol, its koffi prototype and its TS signature. */
export function bindEntryPoint(libName, header, name) {
  const lib = LIBRARIES[libName];
  const symbol = resolveSymbol(name, header.macros);
  const decl = header.functions.get(symbol);
  if (decl === undefined) {
    const how = symbol === name ? '' : ` (${name} maps to ${symbol})`;
    throw new Error(`${lib.header} declares no ${symbol}${how} in the default build`);
  }
  const result = mapType(lib, libName, symbol, decl.result, header.typedefs, `${symbol}: its result`);
  const resultRule = RULES.find((r) => r.library === libName && r.entry === symbol && r.result);
  if (resultRule) matched.add(resultRule);
  const ts = resultRule ? resultRule.ts : result.ts;
  const params = decl.params.map((p) => {
    const m = mapType(lib, libName, symbol, p.type, header.typedefs, `${symbol}(${p.name})`, p.name);
    const tsName = TS_RESERVED.has(p.name) ? `${p.name}_` : p.name;
    return { name: p.name, tsName, ...m };
  });
  return {
    name,
    symbol,
    // The C declaration under the listed name (cuda.h declares the public name; its macro renames it).
    c: cDeclaration(decl, name),
    koffi: `${result.koffi === 'const char *' ? 'const char *' : `${result.koffi} `}${symbol}(${params.map((p) => `${p.koffi}${p.koffi.endsWith('*') ? '' : ' '}${p.name}`).join(', ')})`,
    ts: { params: params.map((p) => `${p.tsName}: ${p.ts}`), result: ts },
  };
}

/** Reads a header: preprocessed, then its declarations. */
export function readHeader(text, file) {
  const { tokens, macros } = preprocess(text, file);
  const { typedefs, functions } = parseDeclarations(tokens);
  return { macros, typedefs, functions };
}

/** The entry points of a list file: one name a line; `#` starts a comment. */
export function readEntryPoints(text) {
  const names = text
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l !== '');
  for (const n of names) if (!isIdent(n)) throw new Error(`entry-point list: "${n}" is not a C name`);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new Error(`entry-point list: ${dup} is listed twice`);
  return names;
}

// ---------------------------------------------------------------------------------------------
// Output.

const WIDTH = 120;

function quote(s) {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * A doc comment of `text` at `indent`, wrapped at the width: between words, or with `breakAt`
 * (', ' for a C declaration) only after that separator, so that no parameter is split.
 */
function doc(text, indent, breakAt = ' ') {
  const one = `${indent}/** ${text} */`;
  if (one.length <= WIDTH) return [one];
  const lines = [`${indent}/**`];
  let line = '';
  for (const w of text.split(breakAt).map((x, i, all) => (i < all.length - 1 ? x + breakAt : x))) {
    if (line && `${indent} * ${line}${w}`.trimEnd().length > WIDTH) {
      lines.push(`${indent} * ${line}`.trimEnd());
      line = w;
    } else line += w;
  }
  lines.push(`${indent} * ${line}`.trimEnd(), `${indent} */`);
  return lines;
}

/** The generated module of one library. */
export function render(libName, entries, headerName = LIBRARIES[libName].header) {
  const lib = LIBRARIES[libName];
  const used = new Set();
  const typeNames = Object.values(lib.types).filter((t) => /^[A-Z]/.test(t));
  for (const e of entries) for (const t of [...e.ts.params, e.ts.result].join(' ').split(/[^\w]+/)) if (typeNames.includes(t) || t === 'NcclUniqueIdStruct') used.add(t);
  const lines = [
    `// GENERATED by scripts/gen-bindings.mjs from ${headerName}${lib.newer ? `, ${lib.newer}` : ''} and ${lib.list}. Do not edit:`,
    '// add an entry point to the list and run `npm run gen:bindings`.',
  ];
  if (used.size) lines.push(`import type { ${[...used].sort().join(', ')} } from '${lib.typesFrom}';`);
  lines.push('', ...doc(lib.docApi, ''), `export interface ${lib.api} {`);
  for (const e of entries) {
    lines.push(...doc(`\`${e.c}\``, '  ', ', '));
    const one = `  ${e.symbol}(${e.ts.params.join(', ')}): ${e.ts.result};`;
    if (one.length <= WIDTH) lines.push(one);
    else lines.push(`  ${e.symbol}(`, ...e.ts.params.map((p) => `    ${p},`), `  ): ${e.ts.result};`);
  }
  lines.push('}', '', ...doc(lib.docSymbol, ''), `export type ${lib.symbol} = keyof ${lib.api};`, '');
  lines.push(...doc(lib.docPrototypes, ''), `export const ${lib.prototypes}: { readonly [K in ${lib.symbol}]: string } = {`);
  for (const e of entries) {
    const one = `  ${e.symbol}: ${quote(e.koffi)},`;
    if (one.length <= WIDTH) lines.push(one);
    else lines.push(`  ${e.symbol}:`, `    ${quote(e.koffi)},`);
  }
  lines.push('};', '');
  return lines.join('\n');
}

/**
 * Generates one library from its header text and list text: the module and its entries.
 * `newerText` (the driver's newer declarations) is read after the header, with its types.
 */
export function generate(libName, headerText, listText, file = LIBRARIES[libName].header, newerText = '') {
  const header = readHeader(newerText === '' ? headerText : `${headerText}\n${newerText}`, file);
  const names = readEntryPoints(listText);
  matched.clear();
  const entries = names.map((n) => bindEntryPoint(libName, header, n));
  for (const r of RULES) {
    if (r.library === libName && r.entry !== undefined && r.entry !== '*' && entries.some((e) => e.symbol === r.entry) && !matched.has(r)) {
      throw new Error(`the rule for ${r.entry}${r.param ? `(${r.param})` : ''} applies to nothing: did ${file} rename it?`);
    }
  }
  const dup = entries.find((e, i) => entries.findIndex((x) => x.symbol === e.symbol) !== i);
  if (dup) throw new Error(`${dup.symbol} is listed twice (as ${entries.filter((x) => x.symbol === dup.symbol).map((x) => x.name).join(' and ')})`);
  return { text: render(libName, entries), entries };
}

// ---------------------------------------------------------------------------------------------
// Finding the headers.

function pythonSitePackages() {
  const r = spawnSync('python3', ['-c', 'import site,sys; print("\\n".join(site.getsitepackages() + [site.getusersitepackages()]))'], {
    encoding: 'utf8',
  });
  return r.status === 0 ? r.stdout.split('\n').filter((l) => l !== '') : [];
}

/** The candidate paths of each header, in order. */
export function headerCandidates(env = process.env, sitePackages = pythonSitePackages) {
  const cudaInclude = env.CUDA_HOME ? join(env.CUDA_HOME, 'include') : '/usr/local/cuda/include';
  let site;
  const sites = () => (site ??= sitePackages());
  return {
    driver: () => [join(cudaInclude, 'cuda.h'), ...(env.CUDA_HOME ? ['/usr/local/cuda/include/cuda.h'] : [])],
    nvrtc: () => [
      join(cudaInclude, 'nvrtc.h'),
      ...(env.CUDA_HOME ? ['/usr/local/cuda/include/nvrtc.h'] : []),
      ...sites().flatMap((s) => [join(s, 'nvidia', 'cu13', 'include', 'nvrtc.h'), join(s, 'nvidia', 'cuda_nvrtc', 'include', 'nvrtc.h')]),
    ],
    nccl: () => [
      ...(env.NCCL_HOME ? [join(env.NCCL_HOME, 'include', 'nccl.h')] : []),
      '/usr/include/nccl.h',
      '/usr/local/include/nccl.h',
      ...sites().map((s) => join(s, 'nvidia', 'nccl', 'include', 'nccl.h')),
    ],
  };
}

/** The symbols of a committed output (the keys of its prototypes object). */
export function committedSymbols(text) {
  return [...text.matchAll(/^  ([A-Za-z_]\w*):(?: '|$)/gm)].map((m) => m[1]);
}

function main(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(cuda|nvrtc|nccl)-header$/.exec(argv[i]);
    if (m) opts[m[1] === 'cuda' ? 'driver' : m[1]] = argv[++i];
    else if (argv[i] === '--out-dir') opts.outDir = argv[++i];
    else throw new Error(`gen-bindings: unknown argument ${argv[i]}`);
  }
  const candidates = headerCandidates();
  let failed = false;
  for (const libName of Object.keys(LIBRARIES)) {
    const lib = LIBRARIES[libName];
    const listText = readFileSync(join(root, lib.list), 'utf8');
    const tried = opts[libName] !== undefined ? [opts[libName]] : candidates[libName]();
    const header = tried.find((p) => existsSync(p));
    const out = join(opts.outDir ?? root, lib.out);
    if (header === undefined) {
      const committed = join(root, lib.out);
      const listed = readEntryPoints(listText);
      const have = existsSync(committed) ? committedSymbols(readFileSync(committed, 'utf8')) : [];
      // Without the header, a listed public name cannot be mapped to its symbol: accept either.
      const missing = listed.filter((n) => !have.includes(n) && !have.some((s) => s.startsWith(`${n}_v`)));
      console.log(`gen-bindings: no ${lib.header} found (looked for ${tried.join(', ')}); kept the committed ${lib.out}`);
      if (missing.length) {
        console.error(`gen-bindings: ${lib.list} lists ${missing.join(', ')}, which ${lib.out} lacks: name a ${lib.header} with --${libName === 'driver' ? 'cuda' : libName}-header`);
        failed = true;
      }
      continue;
    }
    const newer = lib.newer === undefined ? '' : readFileSync(join(root, lib.newer), 'utf8');
    const { text, entries } = generate(libName, readFileSync(header, 'utf8'), listText, header, newer);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, text);
    const renamed = entries.filter((e) => e.name !== e.symbol).length;
    console.log(`gen-bindings: ${entries.length} entry points from ${header}${renamed ? ` (${renamed} mapped to versioned symbols)` : ''} -> ${relative(process.cwd(), out) || out}`);
  }
  if (failed) process.exit(1);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  }
}
