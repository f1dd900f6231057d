/**
 * Checks the binding against the CUDA 13.0 header (and the newer declarations read after it): every bound symbol is the versioned ABI the
 * header's macros map its public name to (read here, and again by the C compiler from the
 * entry-point list the declarations are generated from), with the header's parameter count; and
 * every struct offset cudagraph uses is what the C compiler computes from cuda.h.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DRIVER_PROTOTYPES } from '../../src/driver/sys.js';
import * as L from '../../src/driver/layouts.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const HEADER = '/usr/local/cuda/include/cuda.h';
const missing = !existsSync(HEADER) && `${HEADER} is absent`;
// The declarations newer than this header (src/driver/newer-declarations.h) are checked as the header's own.
const NEWER = readFileSync(join(root, 'src', 'driver', 'newer-declarations.h'), 'utf8');
const text = missing ? '' : `${readFileSync(HEADER, 'utf8')}\n${NEWER}`;

/** `#define cuX  [__CUDA_API_PTSZ(]cuX_vN[)]` → public name → symbol. */
function macroMap(): Map<string, string> {
  const map = new Map<string, string>();
  for (const m of text.matchAll(/^\s*#define\s+(cu[A-Za-z0-9]+)\s+(?:__CUDA_API_PT(?:SZ|DS)\()?(cu[A-Za-z0-9_]+)\)?\s*$/gm)) {
    // The first definition is the default build's (the per-thread block comes later under an #if).
    if (!map.has(m[1]!)) map.set(m[1]!, m[2]!);
  }
  return map;
}

/** The parameter count of the first `CUresult CUDAAPI name(...)` declaration. */
function declaredParams(name: string): number | null {
  const m = new RegExp(`CUresult CUDAAPI ${name}\\(([^;]*?)\\);`).exec(text);
  if (!m) return null;
  const params = m[1]!.trim();
  return params === '' || params === 'void' ? 0 : params.split(',').length;
}

function bindParams(proto: string): number {
  const inner = proto.slice(proto.indexOf('(') + 1, proto.lastIndexOf(')')).trim();
  return inner === '' ? 0 : inner.split(',').length;
}

/** The public name the header declares `symbol` under: the macro that maps to it, else itself without _vN. */
function publicName(symbol: string, macros: Map<string, string>): string {
  for (const [name, target] of macros) if (target === symbol) return name;
  return symbol.replace(/_v\d+$/, '');
}

test('every bound driver symbol is the ABI cuda.h maps its public name to', { skip: missing }, () => {
  const macros = macroMap();
  for (const [key, proto] of Object.entries(DRIVER_PROTOTYPES)) {
    const symbol = /\b(cu[A-Za-z0-9_]+)\(/.exec(proto)![1]!;
    assert.equal(symbol, key, `${key}: the prototype names ${symbol}`);
    const name = publicName(symbol, macros);
    const mapped = macros.get(name);
    if (mapped !== undefined) {
      assert.equal(symbol, mapped, `cuda.h maps ${name} to ${mapped}, the binding uses ${symbol}`);
    } else {
      assert.equal(symbol, name, `${symbol}: cuda.h has no macro for ${name}, so the unversioned symbol must be bound`);
    }
    assert.ok(new RegExp(`CUDAAPI ${name}\\(`).test(text), `cuda.h declares ${name}`);
  }
});

test('every bound driver symbol has the parameter count of its cuda.h declaration', { skip: missing }, () => {
  const macros = macroMap();
  for (const [key, proto] of Object.entries(DRIVER_PROTOTYPES)) {
    const base = publicName(key, macros);
    // The header declares the current ABI under the public name (the macro renames it).
    const n = declaredParams(base) ?? declaredParams(key);
    assert.notEqual(n, null, `no declaration of ${base} in cuda.h`);
    assert.equal(bindParams(proto), n, `${key}: ${bindParams(proto)} parameters bound, cuda.h declares ${n}`);
  }
});

test('the versioned ABIs the issue names are the ones bound', () => {
  for (const s of [
    'cuStreamBeginCapture_v2',
    'cuStreamGetCaptureInfo_v3',
    'cuGraphGetEdges_v2',
    'cuGraphKernelNodeGetParams_v2',
    'cuGraphExecUpdate_v2',
    'cuMemAlloc_v2',
    'cuMemFree_v2',
    'cuMemcpyHtoDAsync_v2',
    'cuStreamDestroy_v2',
    'cuEventDestroy_v2',
    'cuDevicePrimaryCtxRelease_v2',
    'cuMemGetInfo_v2',
    'cuDeviceTotalMem_v2',
    'cuCtxPushCurrent_v2',
    'cuEventElapsedTime_v2',
    'cuGraphExecKernelNodeSetParams_v2',
    'cuMemAllocFromPoolAsync',
    'cuMemPoolCreate',
    'cuMemPoolDestroy',
    'cuMemPoolTrimTo',
    'cuMemPoolGetAttribute',
    'cuGraphAddKernelNode_v2',
    'cuGraphAddDependencies_v2',
    'cuGraphAddMemcpyNode',
    'cuGraphAddMemsetNode',
    'cuGraphAddHostNode',
    'cuGraphAddEmptyNode',
    'cuGraphHostNodeGetParams',
  ]) {
    assert.ok(s in DRIVER_PROTOTYPES, s);
  }
  for (const legacy of [
    'cuStreamBeginCapture',
    'cuGraphGetEdges',
    'cuMemAlloc',
    'cuGraphExecUpdate',
    'cuGraphInstantiate',
    'cuGraphAddKernelNode',
    'cuGraphAddDependencies',
    'cuGraphExecKernelNodeSetParams',
  ]) {
    assert.ok(!(legacy in DRIVER_PROTOTYPES), `${legacy} is the legacy ABI and must not be bound`);
  }
});

const gcc = spawnSync('gcc', ['--version']).status === 0;

test('the C compiler maps each name of the entry-point list to the symbol bound for it', { skip: missing || (!gcc && 'gcc is absent') }, () => {
  const listed = readFileSync(join(root, 'src', 'driver', 'entry-points.txt'), 'utf8')
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l !== '');
  // The preprocessor of the default build expands each name as a program calling it would (the
  // newer declarations after the header, as the generator reads them).
  const source = ['#include <cuda.h>', NEWER, ...listed.map((name, i) => `cg_entry_point ${i} ${name}`), ''].join('\n');
  const cpp = spawnSync('gcc', ['-E', '-P', '-I/usr/local/cuda/include', '-x', 'c', '-'], { input: source, encoding: 'utf8' });
  assert.equal(cpp.status, 0, cpp.stderr);
  const mapped = [...cpp.stdout.matchAll(/^cg_entry_point (\d+) (\S+)$/gm)].map((m) => m[2]);
  assert.equal(mapped.length, listed.length);
  assert.deepEqual(mapped, Object.keys(DRIVER_PROTOTYPES), 'the generated symbols, in the order of the list');
});

test('struct layouts match the C compiler on cuda.h', { skip: missing || (!gcc && 'gcc is absent') }, () => {
  const structs: Array<[string, Record<string, number>]> = [
    ['CUDA_KERNEL_NODE_PARAMS', L.KERNEL_NODE_PARAMS],
    // The lowering writes the versioned struct cuGraphAddKernelNode_v2 takes.
    ['CUDA_KERNEL_NODE_PARAMS_v2', L.KERNEL_NODE_PARAMS],
    ['CUDA_MEMSET_NODE_PARAMS', L.MEMSET_NODE_PARAMS],
    ['CUDA_MEMCPY3D', L.MEMCPY3D],
    ['CUgraphExecUpdateResultInfo', L.EXEC_UPDATE_RESULT_INFO],
    ['CUDA_GRAPH_INSTANTIATE_PARAMS', L.GRAPH_INSTANTIATE_PARAMS],
    ['CUgraphEdgeData', L.GRAPH_EDGE_DATA],
    ['CUmemPoolProps', L.MEM_POOL_PROPS],
    ['CUmemLocation', L.MEM_LOCATION],
    ['CUDA_HOST_NODE_PARAMS', L.HOST_NODE_PARAMS],
    ['CUDA_MEM_ALLOC_NODE_PARAMS', L.MEM_ALLOC_NODE_PARAMS],
    ['CUlaunchConfig', L.LAUNCH_CONFIG],
    ['CUlaunchAttribute', L.LAUNCH_ATTRIBUTE],
  ];
  // The newer declarations go after the header, so the compiler checks them against its types.
  const lines = ['#include <cuda.h>', NEWER, '#include <stdio.h>', '#include <stddef.h>', 'int main(void) {'];
  for (const [t, fields] of structs) {
    for (const f of Object.keys(fields)) {
      lines.push(
        f === 'size'
          ? `  printf("${t}.size %zu\\n", sizeof(${t}));`
          : `  printf("${t}.${f} %zu\\n", offsetof(${t}, ${f}));`,
      );
    }
  }
  // Members inside CUgraphNodeParams' union, by their C designators.
  const nodeParams: Record<keyof typeof L.GRAPH_NODE_PARAMS, string> = {
    size: '',
    type: 'type',
    conditionalHandle: 'conditional.handle',
    conditionalType: 'conditional.type',
    conditionalSize: 'conditional.size',
    conditionalGraphs: 'conditional.phGraph_out',
    conditionalCtx: 'conditional.ctx',
  };
  for (const [f, c] of Object.entries(nodeParams)) {
    lines.push(
      f === 'size'
        ? '  printf("CUgraphNodeParams.size %zu\\n", sizeof(CUgraphNodeParams));'
        : `  printf("CUgraphNodeParams.${f} %zu\\n", offsetof(CUgraphNodeParams, ${c}));`,
    );
  }
  const enums: Array<[string, number, string?]> = [
    ['CU_STREAM_CAPTURE_MODE_GLOBAL', L.CU_STREAM_CAPTURE_MODE.GLOBAL],
    ['CU_STREAM_CAPTURE_MODE_THREAD_LOCAL', L.CU_STREAM_CAPTURE_MODE.THREAD_LOCAL],
    ['CU_STREAM_CAPTURE_MODE_RELAXED', L.CU_STREAM_CAPTURE_MODE.RELAXED],
    ['CU_STREAM_CAPTURE_STATUS_INVALIDATED', L.CU_STREAM_CAPTURE_STATUS.INVALIDATED],
    ['CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH', L.CUDA_GRAPH_INSTANTIATE_FLAG.AUTO_FREE_ON_LAUNCH],
    ['CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD', L.CUDA_GRAPH_INSTANTIATE_FLAG.UPLOAD],
    ['CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH', L.CUDA_GRAPH_INSTANTIATE_FLAG.DEVICE_LAUNCH],
    ['CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY', L.CUDA_GRAPH_INSTANTIATE_FLAG.USE_NODE_PRIORITY],
    ['CU_GRAPH_NODE_TYPE_CONDITIONAL', L.CU_GRAPH_NODE_TYPE.indexOf('conditional')],
    ['CU_GRAPH_COND_TYPE_IF', L.CU_GRAPH_COND_TYPE.IF],
    ['CU_GRAPH_COND_TYPE_WHILE', L.CU_GRAPH_COND_TYPE.WHILE],
    ['CU_GRAPH_COND_TYPE_SWITCH', L.CU_GRAPH_COND_TYPE.SWITCH],
    ['CU_GRAPH_COND_ASSIGN_DEFAULT', L.CU_GRAPH_COND_ASSIGN_DEFAULT],
    ['CU_GRAPH_NODE_TYPE_MEMSET', L.CU_GRAPH_NODE_TYPE.indexOf('memset')],
    ['CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED', L.CU_GRAPH_EXEC_UPDATE_RESULT.indexOf('CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED')],
    ['CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED', L.CUDA_GRAPH_INSTANTIATE_RESULT.indexOf('CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED')],
    ['CU_MEMORYTYPE_UNIFIED', L.CU_MEMORYTYPE.UNIFIED],
    ['CU_MEMORYTYPE_HOST', L.CU_MEMORYTYPE.HOST],
    ['CU_MEMORYTYPE_DEVICE', L.CU_MEMORYTYPE.DEVICE],
    ['CU_GRAPH_NODE_TYPE_HOST', L.CU_GRAPH_NODE_TYPE.indexOf('hostCallback')],
    ['CU_GRAPH_NODE_TYPE_EMPTY', L.CU_GRAPH_NODE_TYPE.indexOf('empty')],
    ['CU_GRAPH_NODE_TYPE_GRAPH', L.CU_GRAPH_NODE_TYPE.indexOf('graph')],
    ['CU_GRAPH_NODE_TYPE_WAIT_EVENT', L.CU_GRAPH_NODE_TYPE.indexOf('waitEvent')],
    ['CU_GRAPH_NODE_TYPE_EVENT_RECORD', L.CU_GRAPH_NODE_TYPE.indexOf('eventRecord')],
    ['CU_GRAPH_NODE_TYPE_MEM_ALLOC', L.CU_GRAPH_NODE_TYPE.indexOf('memAlloc')],
    ['CU_GRAPH_NODE_TYPE_MEM_FREE', L.CU_GRAPH_NODE_TYPE.indexOf('memFree')],
    ['CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC', L.CU_GRAPH_DEPENDENCY_TYPE.PROGRAMMATIC],
    ['CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC', L.CU_GRAPH_KERNEL_NODE_PORT.PROGRAMMATIC],
    ['CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER', L.CU_GRAPH_KERNEL_NODE_PORT.LAUNCH_ORDER],
    ['CU_STREAM_NON_BLOCKING', L.CU.STREAM_NON_BLOCKING],
    ['CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION', L.CU_LAUNCH_ATTRIBUTE.CLUSTER_DIMENSION],
    ['CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION', L.CU_LAUNCH_ATTRIBUTE.PROGRAMMATIC_STREAM_SERIALIZATION],
    ['CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT', L.CU_LAUNCH_ATTRIBUTE.PROGRAMMATIC_EVENT],
    ['CU_LAUNCH_ATTRIBUTE_PRIORITY', L.CU_LAUNCH_ATTRIBUTE.PRIORITY],
    ['CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT', L.CU_GRAPH_MEM_ATTR.USED_MEM_CURRENT],
    ['CU_GRAPH_MEM_ATTR_USED_MEM_HIGH', L.CU_GRAPH_MEM_ATTR.USED_MEM_HIGH],
    ['CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT', L.CU_GRAPH_MEM_ATTR.RESERVED_MEM_CURRENT],
    ['CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH', L.CU_GRAPH_MEM_ATTR.RESERVED_MEM_HIGH],
    ['CU_STREAM_ADD_CAPTURE_DEPENDENCIES', L.CU_STREAM_CAPTURE_DEPENDENCIES.ADD],
    ['CU_EVENT_RECORD_EXTERNAL', L.CU_EVENT_EXTERNAL.RECORD],
    ['CU_EVENT_WAIT_EXTERNAL', L.CU_EVENT_EXTERNAL.WAIT],
    ['CU_STREAM_SET_CAPTURE_DEPENDENCIES', L.CU_STREAM_CAPTURE_DEPENDENCIES.SET],
    ...Object.entries(L.CU_GRAPH_DEBUG_DOT_FLAGS).map(
      ([name, bit]) => [`CU_GRAPH_DEBUG_DOT_FLAGS_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`, bit] as [string, number],
    ),
    ['CU_EVENT_DISABLE_TIMING', L.CU.EVENT_DISABLE_TIMING],
    ['CU_MEMHOSTREGISTER_PORTABLE', L.CU.MEMHOSTREGISTER_PORTABLE],
    ['CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR', L.CU.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
    ['CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR', L.CU.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR],
    ['CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT', L.CU.DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT],
    ['CU_POINTER_ATTRIBUTE_MEMORY_TYPE', L.CU.POINTER_ATTRIBUTE_MEMORY_TYPE],
    ['CU_JIT_ERROR_LOG_BUFFER', L.CU.JIT_ERROR_LOG_BUFFER],
    ['CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES', L.CU.JIT_ERROR_LOG_BUFFER_SIZE_BYTES],
    ['CU_JIT_INFO_LOG_BUFFER', L.CU.JIT_INFO_LOG_BUFFER],
    ['CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES', L.CU.JIT_INFO_LOG_BUFFER_SIZE_BYTES],
    ['CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE', L.CU.GRAPH_DEBUG_DOT_FLAGS_VERBOSE],
    ['CU_STREAM_LEGACY', Number(L.CU.STREAM_LEGACY), '(long long)CU_STREAM_LEGACY'],
    ['CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED', L.CU.DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED],
    ['CU_MEM_ALLOCATION_TYPE_PINNED', L.CU.MEM_ALLOCATION_TYPE_PINNED],
    ['CU_MEM_LOCATION_TYPE_DEVICE', L.CU.MEM_LOCATION_TYPE_DEVICE],
    ['CU_MEMPOOL_ATTR_RELEASE_THRESHOLD', L.CU_MEMPOOL_ATTR.RELEASE_THRESHOLD],
    ['CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT', L.CU_MEMPOOL_ATTR.RESERVED_MEM_CURRENT],
    ['CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH', L.CU_MEMPOOL_ATTR.RESERVED_MEM_HIGH],
    ['CU_MEMPOOL_ATTR_USED_MEM_CURRENT', L.CU_MEMPOOL_ATTR.USED_MEM_CURRENT],
    ['CU_MEMPOOL_ATTR_USED_MEM_HIGH', L.CU_MEMPOOL_ATTR.USED_MEM_HIGH],
  ];
  for (const [name, , expr] of enums) lines.push(`  printf("${name} %lld\\n", (long long)(${expr ?? name}));`);
  lines.push('  return 0;', '}');
  const dir = mkdtempSync(join(tmpdir(), 'cg-layout-'));
  try {
    writeFileSync(join(dir, 'layout.c'), lines.join('\n'));
    const cc = spawnSync('gcc', ['-I/usr/local/cuda/include', '-o', join(dir, 'layout'), join(dir, 'layout.c')], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    const run = spawnSync(join(dir, 'layout'), { encoding: 'utf8' });
    const got = new Map(run.stdout.trim().split('\n').map((l) => l.split(' ') as [string, string]));
    for (const [t, fields] of structs) {
      for (const [f, v] of Object.entries(fields)) assert.equal(Number(got.get(`${t}.${f}`)), v, `${t}.${f}`);
    }
    for (const [f, v] of Object.entries(L.GRAPH_NODE_PARAMS)) assert.equal(Number(got.get(`CUgraphNodeParams.${f}`)), v, `CUgraphNodeParams.${f}`);
    for (const [name, v] of enums) assert.equal(Number(got.get(name)), v, name);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
