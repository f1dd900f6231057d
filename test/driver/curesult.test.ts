import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CUresult, cudaErrorName, cudaErrorDescription, CudaError, CudagraphError, isCaptureErrorCode } from '../../src/index.js';
import { CURESULT_TABLE } from '../../src/errors/curesult-table.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const header = '/usr/local/cuda/include/cuda.h';

test('the CUresult table maps names and numbers both ways', () => {
  assert.equal(CUresult.CUDA_SUCCESS, 0);
  assert.equal(CUresult.CUDA_ERROR_NOT_INITIALIZED, 3);
  assert.equal(CUresult.CUDA_ERROR_NOT_SUPPORTED, 801);
  assert.equal(CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901);
  assert.equal(CUresult.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910);
  assert.equal(CUresult.CUDA_ERROR_UNKNOWN, 999);
  for (const [name, code] of CURESULT_TABLE) {
    assert.equal(cudaErrorName(code), name);
    assert.equal((CUresult as Record<string, number>)[name], code);
  }
  assert.equal(new Set(CURESULT_TABLE.map((e) => e[1])).size, CURESULT_TABLE.length, 'codes are unique');
  assert.equal(cudaErrorName(123456), 'CUDA_ERROR_UNRECOGNIZED(123456)');
  assert.match(cudaErrorDescription(901), /invalidated due to a previous error/);
  const capture = CURESULT_TABLE.filter(([, c]) => isCaptureErrorCode(c)).map(([n]) => n);
  assert.deepEqual(capture, [
    'CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED',
    'CUDA_ERROR_STREAM_CAPTURE_INVALIDATED',
    'CUDA_ERROR_STREAM_CAPTURE_MERGE',
    'CUDA_ERROR_STREAM_CAPTURE_UNMATCHED',
    'CUDA_ERROR_STREAM_CAPTURE_UNJOINED',
    'CUDA_ERROR_STREAM_CAPTURE_ISOLATION',
    'CUDA_ERROR_STREAM_CAPTURE_IMPLICIT',
    'CUDA_ERROR_CAPTURED_EVENT',
    'CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD',
  ]);
});

test('the committed table is what the generator makes from cuda.h, and covers every enumerator', { skip: !existsSync(header) && `${header} is absent` }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-curesult-'));
  try {
    const out = join(dir, 'table.ts');
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'gen-curesult.mjs'), header, '--out', out], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(out, 'utf8'), readFileSync(join(root, 'src', 'errors', 'curesult-table.ts'), 'utf8'));
  } finally {
    rmSync(dir, { recursive: true });
  }
  const text = readFileSync(header, 'utf8');
  const block = text.slice(text.indexOf('typedef enum cudaError_enum {'), text.indexOf('} CUresult;'));
  const enumerators = [...block.matchAll(/^\s+(CUDA_[A-Z0-9_]+)\s*=\s*(\d+)/gm)].map((m) => [m[1], Number(m[2])]);
  assert.deepEqual(
    CURESULT_TABLE.map(([n, c]) => [n, c]),
    enumerators,
  );
});

test('CudaError carries the code, the constant name, the description and the operation', () => {
  const e = new CudaError({ code: 901, operation: 'StreamGraphCapture.end', driverCall: 'cuStreamEndCapture', detail: 'more' });
  assert.ok(e instanceof CudagraphError && e instanceof Error);
  assert.equal(e.name, 'CudaError');
  assert.equal(e.code, 901);
  assert.equal(e.errorName, 'CUDA_ERROR_STREAM_CAPTURE_INVALIDATED');
  assert.equal(e.operation, 'StreamGraphCapture.end');
  assert.equal(e.driverCall, 'cuStreamEndCapture');
  assert.equal(
    e.message,
    `StreamGraphCapture.end: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901): ${cudaErrorDescription(901)} [cuStreamEndCapture]\nmore`,
  );
  const d = new CudaError({ code: 1, operation: 'x', description: 'driver text', details: { a: 1 } });
  assert.equal(d.description, 'driver text');
  assert.deepEqual(d.details, { a: 1 });
  assert.ok(Object.isFrozen(d.details));
});
