/** `cudagraph serve`: its options checked before anything starts, the missing engines, and a whole run in-process over the fake engine. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MODEL_CONFIGS, type EngineOptions } from '../../src/cli/engine-factory.js';
import { serve, serveOptions, type ServeArgs } from '../../src/cli/serve.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { FakeEngine } from '../serve/fake-engine.js';
import { assertUserError, cudagraph, root } from './helpers.js';

const T = { timeout: 30_000 };

const ARGS: ServeArgs = { port: '0', host: '127.0.0.1', engine: 'cpu', slots: '4', queue: '8', config: 'small', seed: '0' };

test('serve: every option is checked before anything starts, one line each', T, () => {
  const cases: [string[], RegExp][] = [
    [['--port', 'abc'], /--port must be an integer from 0 to 65535, got 'abc'/],
    [['--port', '-1'], /--port must be an integer from 0 to 65535/],
    [['--port', '70000'], /--port must be an integer from 0 to 65535, got '70000'/],
    [['--host', ''], /--host must be a host name or address/],
    [['--host', 'a b'], /--host must be a host name or address/],
    [['--slots', '0'], /--slots must be an integer from 1 to 4096, got '0'/],
    [['--slots', '2.5'], /--slots must be an integer/],
    [['--max-batch', '4097'], /--max-batch must be an integer from 1 to 4096/],
    [['--engine', 'gpu', '--max-batch', '33'], /--max-batch must be an integer from 1 to 32/],
    [['--max-batch', '4', '--prefill-chunk', '5'], /--prefill-chunk must be an integer from 1 to 4/],
    [['--prefill-chunk', '0'], /--prefill-chunk must be an integer from 1/],
    [['--max-batch', '0'], /--max-batch must be an integer from 1/],
    [['--queue', '-3'], /--queue must be an integer from 0 to 1000000/],
    [['--max-tokens', '0'], /--max-tokens must be an integer from 1 to 2047, got '0'/],
    [['--max-tokens', '512', '--config', 'small'], /--max-tokens must be an integer from 1 to 511, got '512'/],
    [['--seed', 'x'], /--seed must be an integer from 0 to 4294967295/],
    [['--headers-timeout', '0'], /--headers-timeout must be an integer from 1 to 86400000, got '0'/],
    [['--headers-timeout', '5000', '--request-timeout', '4000'], /--request-timeout must be an integer from 5000 to 86400000, got '4000'/],
    [['--max-connections', '0'], /--max-connections must be an integer from 1 to 1000000/],
    [['--weights', 'no-such-file.safetensors'], /--weights: cannot read 'no-such-file\.safetensors': no such file or folder/],
    [['--weights', 'test'], /--weights: cannot read 'test': it is a folder/],
    [['--engine', 'tpu'], /argument 'tpu' is invalid\. Allowed choices are cpu, gpu, gpu-eager/],
    [['--config', 'huge'], /argument 'huge' is invalid\. Allowed choices are small, default/],
    [['--nope'], /unknown option '--nope'/],
    [['extra'], /too many arguments/],
  ];
  for (const [args, message] of cases) {
    const r = cudagraph(['serve', ...args], { timeoutMs: 20_000 });
    assertUserError(r, message, args.join(' '));
    assert.doesNotMatch(r.stderr, /listening/);
  }
});

test('serve --engine gpu without a driver: a one-line error that points to cudagraph doctor, not a crash', { ...T, skip: process.env['CUDA_TESTS'] !== undefined && 'a GPU machine: the engine starts there' }, () => {
  for (const kind of ['gpu', 'gpu-eager']) {
    const r = cudagraph(['serve', '--engine', kind, '--config', 'small', '--port', '0'], { timeoutMs: 60_000, env: { ...process.env, CUDA_DRIVER_PATH: '/nonexistent/libcuda.so.1' } });
    assertUserError(r, /doctor/, kind);
    assert.doesNotMatch(r.stderr, /listening|\n\s+at /);
  }
});

test('serveOptions: the defaults, and --max-batch, --prefill-chunk and --max-tokens follow --engine, --slots and --config', () => {
  const p = serveOptions({ ...ARGS, config: 'default' });
  assert.equal(p.maxBatch, 4);
  assert.equal(p.maxTokens, 256);
  assert.equal(serveOptions({ ...ARGS, maxBatch: '2' }).maxBatch, 2);
  assert.equal(p.prefillChunk, 4, '--prefill-chunk follows --max-batch');
  assert.equal(serveOptions({ ...ARGS, maxBatch: '16' }).maxBatch, 16, 'above --slots: room for prompt chunks');
  assert.equal(serveOptions({ ...ARGS, prefillChunk: '1' }).prefillChunk, 1);
  assert.deepEqual([serveOptions({ ...ARGS, engine: 'gpu' }).maxBatch, serveOptions({ ...ARGS, engine: 'gpu-eager' }).prefillChunk], [32, 32], 'the gpu engines fill their largest bucket');
  assert.equal(serveOptions({ ...ARGS, maxTokens: '511' }).maxTokens, 511);
  assert.throws(() => serveOptions({ ...ARGS, queue: '1e3' }), UsageError);
  assert.deepEqual([p.headersTimeoutMs, p.requestTimeoutMs, p.maxConnections], [10_000, 30_000, 1024]);
  assert.equal(serveOptions({ ...ARGS, headersTimeout: '40000' }).requestTimeoutMs, 40_000, 'the request timeout is at least the headers timeout');
  const set = serveOptions({ ...ARGS, headersTimeout: '500', requestTimeout: '2000', maxConnections: '10' });
  assert.deepEqual([set.headersTimeoutMs, set.requestTimeoutMs, set.maxConnections], [500, 2000, 10]);
  assert.equal(MODEL_CONFIGS.small.maxPositions, 512);
});

/** Collects the output and resolves `listening` with the port of the listening line. */
function capture(): { io: { out(t: string): void; err(t: string): void }; text: () => string; listening: Promise<number> } {
  let text = '';
  let found!: (port: number) => void;
  const listening = new Promise<number>((r) => (found = r));
  return {
    io: {
      out: (t) => {
        text += t;
        const m = /listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(t);
        if (m) found(Number(m[1]));
      },
      err: (t) => void (text += t),
    },
    text: () => text,
    listening,
  };
}

test('serve in-process: builds the engine from the options, serves, stops cleanly, disposes the engine', T, async () => {
  const built: EngineOptions[] = [];
  let engine!: FakeEngine;
  let disposed = false;
  const ac = new AbortController();
  const c = capture();
  const running = serve({ ...ARGS, slots: '6', maxBatch: '3', maxTokens: '40', seed: '7' }, c.io, {
    signal: ac.signal,
    createEngine: async (o) => {
      built.push(o);
      engine = new FakeEngine({ slots: o.slots, maxBatch: o.maxBatch, maxPositions: o.config.maxPositions, delayMs: 1 });
      const dispose = engine.dispose.bind(engine);
      engine.dispose = () => {
        disposed = true;
        dispose();
      };
      return engine;
    },
  });
  const port = await c.listening;
  assert.deepEqual(built, [{ kind: 'cpu', config: MODEL_CONFIGS.small, slots: 6, maxBatch: 3, seed: 7 }]);
  assert.match(c.text(), /model cudagraph-llama-small, engine fake; 3 running at most, 3 entries a step, prompt chunks of 3, queue 8, max_tokens ≤ 40, context 512\)/);
  const url = `http://127.0.0.1:${port}`;
  assert.deepEqual(await (await fetch(`${url}/health`)).json(), { status: 'ok', engine: 'fake', model: 'cudagraph-llama-small', running: 0, queued: 0 });
  const ok = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'hi', max_tokens: 40 }) });
  assert.equal(ok.status, 200);
  const over = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'hi', max_tokens: 41 }) });
  assert.equal(over.status, 400);
  ac.abort();
  assert.equal(await running, 0);
  assert.ok(disposed, 'the engine is disposed');
  assert.match(c.text(), /shutting down \(0 running, 0 waiting/);
  assert.match(c.text(), /stopped after 1 requests, 40 tokens generated\n$/);
  await assert.rejects(fetch(`${url}/health`));
});

test('serve in-process: a port in use is a usage error, and the engine is disposed', T, async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  const port = (blocker.address() as { port: number }).port;
  let disposed = false;
  try {
    await assert.rejects(
      serve({ ...ARGS, port: String(port) }, capture().io, {
        createEngine: async () => {
          const e = new FakeEngine();
          e.dispose = () => void (disposed = true);
          return e;
        },
      }),
      (e: unknown) => e instanceof UsageError && new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`).test(e.message),
    );
    assert.ok(disposed);
  } finally {
    blocker.close();
  }
});

const referenceBuilt = existsSync(fileURLToPath(new URL('../../src/llm/reference-engine.js', import.meta.url)));

test('serve as a process with the CPU engine: listens, answers, exits 0 on SIGTERM', { ...T, skip: referenceBuilt ? false : 'the CPU reference engine is not part of this build' }, async () => {
  const child = spawn(process.execPath, [join(root, 'bin', 'cudagraph.js'), 'serve', '--port', '0', '--config', 'small', '--slots', '2'], { cwd: root });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (t: string) => (out += t));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.on('data', (t: string) => {
        out += t;
        const m = /listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(out);
        if (m) resolve(Number(m[1]));
      });
      void exited.then(() => reject(new Error(`serve exited early: ${out}`)));
    });
    const res = await fetch(`http://127.0.0.1:${port}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'hi', max_tokens: 2 }) });
    assert.equal(res.status, 200);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, out);
    assert.match(out, /stopped after 1 requests/);
  } finally {
    child.kill('SIGKILL');
  }
});
