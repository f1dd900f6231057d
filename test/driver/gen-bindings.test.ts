/**
 * The generated declarations (scripts/gen-bindings.mjs): the committed files are what the
 * generator makes from the headers found on this machine (compared byte for byte), the generator
 * keeps them where a header is missing, its conventions and rules hold on small headers written
 * here (so they are checked where no NVRTC or NCCL header is installed), and every committed
 * prototype parses in koffi.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DRIVER_PROTOTYPES, NVRTC_PROTOTYPES } from '../../src/driver/sys.js';
import { NCCL_PROTOTYPES, UNIQUE_ID_TYPE } from '../../src/nccl/sys.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const script = join(root, 'scripts', 'gen-bindings.mjs');

type Library = 'driver' | 'nvrtc' | 'nccl';
interface Entry {
  name: string;
  symbol: string;
  koffi: string;
  ts: { params: string[]; result: string };
}
interface Generator {
  LIBRARIES: Record<Library, { header: string; list: string; out: string }>;
  generate(lib: Library, headerText: string, listText: string, file?: string, newerText?: string): { text: string; entries: Entry[] };
  headerCandidates(): Record<Library, () => string[]>;
  readEntryPoints(text: string): string[];
  committedSymbols(text: string): string[];
}
const gen = (await import(pathToFileURL(script).href)) as Generator;
const LIBS: Library[] = ['driver', 'nvrtc', 'nccl'];
const candidates = gen.headerCandidates();
const found = Object.fromEntries(LIBS.map((l) => [l, candidates[l]().find((p) => existsSync(p))])) as Record<Library, string | undefined>;

let dir = '';
let run: ReturnType<typeof spawnSync> | null = null;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cg-gen-bindings-'));
  run = spawnSync(process.execPath, [script, '--out-dir', dir], { encoding: 'utf8' });
});
after(() => {
  if (dir) rmSync(dir, { recursive: true });
});

for (const lib of LIBS) {
  const { header, out } = gen.LIBRARIES[lib];
  const skip = found[lib] === undefined && `no ${header} on this machine (looked for ${candidates[lib]().join(', ')})`;
  test(`the committed ${out} is what the generator makes from ${header}`, { skip }, () => {
    assert.equal(run!.status, 0, String(run!.stderr));
    assert.equal(readFileSync(join(dir, out), 'utf8'), readFileSync(join(root, out), 'utf8'), `${out} is stale: run npm run gen:bindings`);
  });
}

test('without the headers the generator keeps the committed files, which cover their lists', () => {
  const out = mkdtempSync(join(tmpdir(), 'cg-gen-keep-'));
  try {
    const none = join(out, 'none.h');
    const r = spawnSync(process.execPath, [script, '--cuda-header', none, '--nvrtc-header', none, '--nccl-header', none, '--out-dir', out], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    for (const lib of LIBS) {
      assert.match(r.stdout, new RegExp(`no ${gen.LIBRARIES[lib].header.replace('.', '\\.')} found .*kept the committed ${gen.LIBRARIES[lib].out}`));
      assert.ok(!existsSync(join(out, gen.LIBRARIES[lib].out)), 'nothing is written for a missing header');
    }
  } finally {
    rmSync(out, { recursive: true });
  }
  // NVRTC and NCCL have no versioned symbols: the committed keys are the list, in order.
  for (const [lib, protos] of [
    ['nvrtc', NVRTC_PROTOTYPES],
    ['nccl', NCCL_PROTOTYPES],
  ] as const) {
    const listed = gen.readEntryPoints(readFileSync(join(root, gen.LIBRARIES[lib].list), 'utf8'));
    assert.deepEqual(Object.keys(protos), listed, lib);
    assert.deepEqual(gen.committedSymbols(readFileSync(join(root, gen.LIBRARIES[lib].out), 'utf8')), listed, lib);
  }
  assert.equal(
    gen.readEntryPoints(readFileSync(join(root, gen.LIBRARIES.driver.list), 'utf8')).length,
    Object.keys(DRIVER_PROTOTYPES).length,
  );
});

const CUDA_LIKE = `
#if defined(__CUDA_API_VERSION_INTERNAL) || defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define __CUDA_API_PTSZ(api) api ## _ptsz
#else
    #define __CUDA_API_PTSZ(api) api
#endif
#define cuThing    __CUDA_API_PTSZ(cuThing_v2)
#define cuOld      cuOld_v3
#ifdef _WIN32
#define CUDAAPI __stdcall
#else
#define CUDAAPI
#endif
#if defined(_WIN64) || defined(__LP64__)
typedef unsigned long long CUdeviceptr_v2;
#else
typedef unsigned int CUdeviceptr_v2;
#endif
typedef CUdeviceptr_v2 CUdeviceptr;
typedef struct CUstream_st *CUstream;             /**< a handle */
typedef struct CUpair_st { int a, b; } CUpair;    /* a struct, with a body */
typedef enum cudaError_enum { CUDA_SUCCESS = 0 } CUresult;
typedef void (CUDAAPI *CUhostFn)(void *userData);
/** A doc comment, with an apostrophe: it's ignored. */
CUresult CUDAAPI cuThing(CUstream hStream, CUdeviceptr dptr, const char *name, const void *src, size_t n,
                         unsigned long long flags, CUhostFn fn, unsigned char uc, const CUpair **pairs);
__attribute__((deprecated)) CUresult CUDAAPI cuOld(CUpair pair);
CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
#if defined(__CUDA_API_VERSION_INTERNAL)
CUresult CUDAAPI cuThing(CUstream hStream);
#endif
`;

test('cuda.h-like header: macros map public names to the default-stream symbol; the conventions and rules apply', () => {
  const { entries, text } = gen.generate('driver', CUDA_LIKE, 'cuThing\ncuLaunchHostFunc\n', 'test.h');
  const [thing, host] = entries;
  assert.equal(thing!.symbol, 'cuThing_v2', 'no _ptsz: the default-stream build');
  assert.equal(
    thing!.koffi,
    'int cuThing_v2(void *hStream, uint64_t dptr, const char *name, const void *src, size_t n, uint64_t flags, void *fn, uint8_t uc, void *pairs)',
  );
  assert.deepEqual(thing!.ts.params, [
    'hStream: Handle',
    'dptr: DevicePtr',
    'name: string',
    'src: HostPtr',
    'n: number',
    'flags: bigint',
    'fn: Handle',
    'uc: number',
    'pairs: HostPtr',
  ]);
  assert.equal(thing!.ts.result, 'number');
  assert.deepEqual(host!.ts.params, ['hStream: Handle', 'fn: Handle', 'userData: Handle'], 'the userData rule');
  assert.match(text, /^\/\/ GENERATED by scripts\/gen-bindings\.mjs from cuda\.h, src\/driver\/newer-declarations\.h and src\/driver\/entry-points\.txt\./);
  assert.match(text, / \* `CUresult cuThing\(CUstream hStream, CUdeviceptr dptr, /, 'the C declaration, under the public name');
  assert.match(text, /import type \{ DevicePtr, Handle, HostPtr \} from '\.\/sys\.js';/);
  // Listing the exact versioned symbol binds the same declaration.
  assert.equal(gen.generate('driver', CUDA_LIKE, 'cuThing_v2\n').entries[0]!.koffi, thing!.koffi);
});

test('declarations newer than the header are bound with its types; one the header also declares must agree', () => {
  const newer = 'CUresult CUDAAPI cuNewer(CUstream hStream, unsigned long long *id);\n';
  const { entries } = gen.generate('driver', CUDA_LIKE, 'cuNewer\ncuLaunchHostFunc\n', 'test.h', newer);
  assert.deepEqual(entries[0]!.ts.params, ['hStream: Handle', 'id: HostPtr']);
  assert.equal(entries[0]!.koffi, 'int cuNewer(void *hStream, void *id)');
  assert.throws(() => gen.generate('driver', CUDA_LIKE, 'cuNewer\n'), /declares no cuNewer/, 'without the newer declarations it is unknown');
  // The header catching up with the same declaration is fine; a different one is refused.
  assert.doesNotThrow(() => gen.generate('driver', CUDA_LIKE, 'cuLaunchHostFunc\n', 'test.h', 'CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);\n'));
  assert.throws(() => gen.generate('driver', CUDA_LIKE, 'cuLaunchHostFunc\n', 'test.h', 'CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream);\n'), /cuLaunchHostFunc is declared twice, differently/);
});

test('the generator refuses what it cannot translate faithfully', () => {
  assert.throws(() => gen.generate('driver', CUDA_LIKE, 'cuOld\n'), /cuOld_v3\(pair\): CUpair is a struct passed by value; add a rule/);
  assert.throws(() => gen.generate('driver', CUDA_LIKE, 'cuMissing\n'), /declares no cuMissing/);
  assert.throws(() => gen.generate('driver', CUDA_LIKE, 'cuThing\ncuThing_v2\n'), /cuThing_v2 is listed twice/);
  assert.throws(() => gen.generate('driver', 'typedef int CUresult;\nCUresult cuX(CUnknown *p);\n', 'cuX\n'), /CUnknown is not declared/);
  assert.throws(() => gen.generate('driver', '#error "no"\n', 'cuX\n'), /#error "no"/);
  // A rule for a listed entry point that no longer applies (the header renamed the parameter).
  assert.throws(
    () => gen.generate('nvrtc', 'typedef enum { NVRTC_SUCCESS = 0 } nvrtcResult;\ntypedef struct _nvrtcProgram *nvrtcProgram;\nnvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int n, const char * const *opts);\n', 'nvrtcCompileProgram\n'),
    /the rule for nvrtcCompileProgram\(options\) applies to nothing/,
  );
});

test('nvrtc.h- and nccl.h-like headers give the committed prototypes (the NVRTC and NCCL rules)', () => {
  const nvrtc = gen.generate(
    'nvrtc',
    `typedef enum { NVRTC_SUCCESS = 0 } nvrtcResult;
     const char *nvrtcGetErrorString(nvrtcResult result);
     typedef struct _nvrtcProgram *nvrtcProgram;
     nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int numHeaders,
                                    const char * const *headers, const char * const *includeNames);
     nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char * const *options);
     nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char * const name_expression);`,
    'nvrtcGetErrorString\nnvrtcCreateProgram\nnvrtcCompileProgram\nnvrtcAddNameExpression\n',
  );
  for (const e of nvrtc.entries) assert.equal(e.koffi, NVRTC_PROTOTYPES[e.symbol as keyof typeof NVRTC_PROTOTYPES], e.symbol);
  assert.equal(nvrtc.entries[0]!.ts.result, 'string', 'nvrtcGetErrorString never returns NULL');
  assert.deepEqual(nvrtc.entries[2]!.ts.params, ['prog: Handle', 'numOptions: number', 'options: readonly string[] | null']);

  const nccl = gen.generate(
    'nccl',
    `#include <cuda_runtime.h>
     #if CUDART_VERSION >= 11000
     #include <cuda_bf16.h>
     #endif
     #ifdef __cplusplus
     extern "C" {
     #endif
     typedef struct ncclComm* ncclComm_t;
     #define NCCL_UNIQUE_ID_BYTES 128
     typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;
     typedef enum { ncclSuccess = 0 } ncclResult_t;
     typedef enum { ncclSum = 0 } ncclRedOp_t;
     typedef enum { ncclInt8 = 0, ncclChar = 0 } ncclDataType_t;
     ncclResult_t  ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
     ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
     ncclResult_t  ncclCommCount(const ncclComm_t comm, int* count);
     const char*  ncclGetLastError(ncclComm_t comm);
     ncclResult_t  ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
     ncclResult_t  ncclGroupStart();
     #ifdef __cplusplus
     } // end extern "C"
     #endif`,
    'ncclCommInitRank\nncclCommCount\nncclGetLastError\nncclAllReduce\nncclGroupStart\n',
  );
  for (const e of nccl.entries) assert.equal(e.koffi, NCCL_PROTOTYPES[e.symbol as keyof typeof NCCL_PROTOTYPES], e.symbol);
  assert.ok(NCCL_PROTOTYPES.ncclCommInitRank.includes(` ${UNIQUE_ID_TYPE} commId`), 'the by-value struct is the type nccl/sys.ts declares');
  assert.deepEqual(nccl.entries[0]!.ts.params, ['comm: NcclHostPtr', 'nranks: number', 'commId: NcclUniqueIdStruct', 'rank: number']);
  assert.deepEqual(nccl.entries[3]!.ts.params.slice(0, 2), ['sendbuff: bigint', 'recvbuff: bigint']);
  assert.equal(nccl.entries[2]!.ts.result, 'string | null');
});

test('every committed prototype parses in koffi under its own name, with the conventions types only', () => {
  const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
  const idType = 'cgcheck_ncclUniqueId';
  koffi.struct(idType, { internal: koffi.array('uint8_t', 128, 'Typed') });
  const allowed = new Set(['Int32', 'UInt32', 'UInt8', 'UInt16', 'UInt64', 'Pointer', 'String', 'Record']);
  for (const [key, proto] of Object.entries({ ...DRIVER_PROTOTYPES, ...NVRTC_PROTOTYPES, ...NCCL_PROTOTYPES })) {
    assert.equal(/([A-Za-z_]\w*)\(/.exec(proto)![1], key, `${key}: the prototype names ${proto}`);
    const t = koffi.type(koffi.proto(proto.replace(`${key}(`, `cgcheck_${key}(`).replace(UNIQUE_ID_TYPE, idType))) as unknown as {
      proto: { result: { primitive: string }; arguments: Array<{ type: { primitive: string; size: number } }> };
    };
    assert.ok(['Int32', 'String'].includes(t.proto.result.primitive), `${key}: returns ${t.proto.result.primitive}`);
    for (const a of t.proto.arguments) assert.ok(allowed.has(a.type.primitive), `${key}: a ${a.type.primitive} parameter`);
    assert.equal(t.proto.arguments.length, proto.slice(proto.indexOf('(') + 1, -1).split(',').filter((p) => p.trim() !== '').length, key);
  }
});
