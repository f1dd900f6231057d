/**
 * `npm run bench:host`: what cudagraph adds on top of the driver on its hot calls, measured on any
 * machine with gcc, GPU or not. It builds a no-op stand-in for libcuda (fixtures/stand-in-driver.c:
 * every cuLaunchKernel and cuGraphLaunch returns success at once), loads it as the driver of this
 * process, and times, in ns per call, interleaved over several rounds (medians of the per-round
 * medians, and their min–max):
 *
 *   - the Node-API addon's registered launch called directly, with Node-API arguments and through
 *     its mailbox (the binding's floor);
 *   - `PreparedLaunch.launch`: the public call, eager, and on a capturing stream;
 *   - the same on koffi (the addon switched off in-process);
 *   - the addon's graph launch, both forms, and `GraphExec.launch`;
 *   - building a chain of 10,000 kernel nodes, per node: C's loop of `cuGraphAddKernelNode_v2`
 *     against the same stand-in (bench/host-c-chain.c, the GPU bench's C worker loop: the floor),
 *     the addon's mailbox call alone (the single call's floor), one `Graph.addKernelNodes` batch,
 *     and `Graph.addKernelNode` one call a node; and
 *     `GraphExec.setKernelArgs` (beside the addon's mailbox call alone, its floor) and
 *     `GraphExec.setNodeEnabled`, one call each (the rows bench:gpu times on the GPU:
 *     bench/gpu/cudagraph-worker.ts, `buildBatch`, `build`, `updateRow`).
 *
 * The driver does nothing, so each figure is the cost of the call itself: the JS checks, the FFI
 * transition and the argument conversion. On the GPU the driver's own work comes on top (bench:gpu).
 * Kernels report two parameters of 8 and 4 bytes (cuFuncGetParamInfo), as `add2` does on the GPU,
 * so the argument checks run as there. The construction rows time the adding call only, as the GPU
 * worker does: the graph's creation, the entries and the dispose are outside the span.
 *
 *   node dist/bench/host-overhead.js [--rounds 7] [--calls 200000] [--out file.json]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, calls: { type: 'string' }, out: { type: 'string' } } });
const ROUNDS = Number(values.rounds ?? 7);
const CALLS = Number(values.calls ?? 200_000);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || !Number.isInteger(CALLS) || CALLS < 1000) {
  process.stderr.write('bench:host: --rounds must be an integer ≥ 1 and --calls an integer ≥ 1000\n');
  process.exit(2);
}

// Build the stand-in and make it this process's driver before cudagraph loads one (it loads lazily).
const source = fileURLToPath(new URL('../../fixtures/stand-in-driver.c', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cudagraph-bench-host-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const cChainSource = fileURLToPath(new URL('../../bench/host-c-chain.c', import.meta.url));
const so = join(dir, 'libcuda-stand-in.so');
const cc = spawnSync('gcc', ['-O2', '-fPIC', '-shared', '-DSTAND_IN_PARAM_INFO', '-o', so, source, cChainSource], { encoding: 'utf8' });
if (cc.status !== 0) {
  process.stderr.write(`bench:host: building the stand-in driver with gcc failed${cc.error ? `: ${cc.error.message}` : `:\n${cc.stderr}`}\n`);
  process.exit(1);
}
process.env['CUDA_DRIVER_PATH'] = so;
/** C's construction loop, in the stand-in's library (bench/host-c-chain.c): ns per node. */
let cChain: (n: number, func: bigint, buffer: bigint) => number;
{
  // Every kernel takes (pointer, int): set before any kernel is loaded.
  const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
  const lib = koffi.load(so);
  const u64s = (name: string, n: number): BigUint64Array => new BigUint64Array(koffi.view(lib.symbol(name) as bigint, 8 * n));
  u64s('param_sizes', 2).set([8n, 4n]);
  u64s('param_count', 1)[0] = 2n;
  cChain = lib.func('double bench_c_chain(int, uint64_t, uint64_t)') as typeof cChain;
}

const { Device, Module, StreamGraphCapture, DeviceBuffer, Graph, arg } = await import('../src/index.js');
const { nativeAddon, nativeStatus, setNativeAddonForTesting, mailboxOf, MAILBOX, bindNativeSymbol } = await import('../src/driver/hot.js');
const { kernelNodeBlock } = await import('../src/driver/result/kernel-node-block.js');
const { encodeKernelParams } = await import('../src/driver/result/graph-build.js');

const device = Device.get(0);
const stream = device.createStream({ nonBlocking: true });
const sh = stream.handle;
const module = Module.load(device, '// stand-in: any text\n');
const buffer = DeviceBuffer.alloc(device, 1024);
const kernel = module.function('add2');
const prepared = kernel.prepare({ grid: 1, block: 256, args: [buffer, arg.i32(256)] });
const hot = nativeAddon();
const binding = nativeStatus();
setNativeAddonForTesting(null);
const preparedKoffi = kernel.prepare({ grid: 1, block: 256, args: [buffer, arg.i32(256)] });
setNativeAddonForTesting(hot);
const exec = (() => {
  const cap = StreamGraphCapture.begin(stream);
  prepared.launch(stream);
  return cap.end();
})();
const execHandle = exec.handle;
prepared.launch(stream); // binds cuLaunchKernel into the addon
exec.launch(stream); // and cuGraphLaunch
const id = hot !== null ? prepared.callFor('bench').idIn(hot) : -1;
if (hot !== null) bindNativeSymbol('bench', hot, 'cuLaunchKernel');

/** The chain the construction rows build (the GPU bench's chain). */
const CHAIN = 10_000;
const config = { grid: 1, block: 256, args: [buffer, arg.i32(256)] };
type Node = ReturnType<InstanceType<typeof Graph>['addKernelNode']>;
/** Builds chains with `add` until `n` nodes are added (at least one chain); ns per node of the adding calls alone. */
const chains = (n: number, add: (g: InstanceType<typeof Graph>, first: Node) => number): number => {
  let ns = 0;
  let nodes = 0;
  do {
    const g = Graph.create(device);
    const first = g.addKernelNode(kernel, config);
    ns += add(g, first);
    nodes += CHAIN - 1;
    g.dispose();
  } while (nodes < n);
  return ns / nodes;
};
const now = (): number => Number(process.hrtime.bigint());
// An exec of a short chain for the update row; its middle node gets new arguments, two sets alternated.
const updateGraph = Graph.create(device);
const updateNodes: Node[] = [updateGraph.addKernelNode(kernel, config)];
for (let i = 1; i < 16; i++) updateNodes.push(updateGraph.addKernelNode(kernel, config, [updateNodes[i - 1]!]));
const updateExec = updateGraph.instantiate();
const updateNode = updateNodes[8]!;
const updateArgs = [
  [buffer, arg.i32(255)],
  [buffer, arg.i32(256)],
] as const;

/** A row: `run(n)` makes n calls; it returns ns per call where it times only part of its work. */
type Column = { name: string; run: (n: number) => number | void };
const columns: Column[] = [
  {
    name: 'empty loop',
    run: (n) => {
      let x = 0;
      for (let i = 0; i < n; i++) x += i;
      if (x < 0) throw new Error('unreachable');
    },
  },
  ...(hot !== null
    ? [
        {
          name: 'addon launch(id, stream) (raw)',
          run: (n: number) => {
            for (let i = 0; i < n; i++) hot.launch(id, sh);
          },
        },
        {
          name: 'addon launchFromMailbox (raw)',
          run: (n: number) => {
            const box = mailboxOf(hot);
            for (let i = 0; i < n; i++) {
              box.u32[MAILBOX.ID] = id;
              box.u64[MAILBOX.STREAM] = sh;
              hot.launchFromMailbox();
              if (box.i32[MAILBOX.RESULT] !== 0) throw new Error('launch failed');
            }
          },
        },
      ]
    : []),
  {
    name: 'PreparedLaunch.launch',
    run: (n) => {
      for (let i = 0; i < n; i++) prepared.launch(stream);
    },
  },
  {
    name: 'PreparedLaunch.launch, capturing',
    run: (n) => {
      const cap = StreamGraphCapture.begin(stream);
      try {
        for (let i = 0; i < n; i++) prepared.launch(stream);
      } finally {
        cap.endGraph().dispose();
      }
    },
  },
  {
    name: 'PreparedLaunch.launch on koffi',
    run: (n) => {
      for (let i = 0; i < n; i++) preparedKoffi.launch(stream);
    },
  },
  ...(hot !== null
    ? [
        {
          name: 'addon graphLaunch(exec, stream) (raw)',
          run: (n: number) => {
            for (let i = 0; i < n; i++) hot.graphLaunch(execHandle, sh);
          },
        },
        {
          name: 'addon graphLaunchFromMailbox (raw)',
          run: (n: number) => {
            const box = mailboxOf(hot);
            for (let i = 0; i < n; i++) {
              box.u64[MAILBOX.EXEC] = execHandle;
              box.u64[MAILBOX.STREAM] = sh;
              hot.graphLaunchFromMailbox();
              if (box.i32[MAILBOX.RESULT] !== 0) throw new Error('graph launch failed');
            }
          },
        },
      ]
    : []),
  {
    name: 'GraphExec.launch',
    run: (n) => {
      for (let i = 0; i < n; i++) exec.launch(stream);
    },
  },
  {
    name: `C loop of cuGraphAddKernelNode_v2, ${CHAIN.toLocaleString('en')}-node chain, per node`,
    run: (n) => {
      let ns = 0;
      let nodes = 0;
      do {
        const perNode = cChain(CHAIN, kernel.handle, buffer.ptr);
        if (perNode < 0) throw new Error('bench:host: the C loop failed');
        ns += perNode * (CHAIN - 1);
        nodes += CHAIN - 1;
      } while (nodes < n);
      return ns / nodes;
    },
  },
  ...(hot !== null
    ? [
        {
          name: 'addon addKernelNodeFromMailbox (raw), per node of a chain',
          run: (n: number) =>
            chains(n, (g, first) => {
              // The single call's floor: the mailbox call alone, its parameters encoded once, no checks.
              bindNativeSymbol('bench', hot, 'cuGraphAddKernelNode_v2');
              const b = kernelNodeBlock(1);
              b.bytes.set(encodeKernelParams({ func: kernel.handle, grid: [1, 1, 1], block: [256, 1, 1], sharedMem: 0, kernelParams: 0n }));
              b.encoded = null;
              const box = mailboxOf(hot);
              const gh = g.handle;
              let prev = first.handle;
              const t0 = now();
              for (let i = 1; i < CHAIN; i++) {
                b.handles[0] = prev;
                box.u64[MAILBOX.GRAPH] = gh;
                box.u64[MAILBOX.PARAMS] = b.params;
                box.u64[MAILBOX.DEPS] = b.deps;
                box.u32[MAILBOX.COUNT] = 1;
                hot.addKernelNodeFromMailbox();
                if (box.i32[MAILBOX.RESULT] !== 0) throw new Error('add failed');
                prev = box.u64[MAILBOX.NODE]!;
              }
              return now() - t0;
            }),
        },
      ]
    : []),
  {
    name: `Graph.addKernelNodes, ${CHAIN.toLocaleString('en')}-node chain, per node`,
    run: (n) =>
      chains(n, (g, first) => {
        const entries = new Array<{ kernel: typeof kernel; config: typeof config; after: (Node | number)[] }>(CHAIN - 1);
        entries[0] = { kernel, config, after: [first] };
        for (let i = 1; i < CHAIN - 1; i++) entries[i] = { kernel, config, after: [i - 1] };
        const t0 = now();
        g.addKernelNodes(entries);
        return now() - t0;
      }),
  },
  {
    name: 'Graph.addKernelNode, per node of a chain',
    run: (n) =>
      chains(n, (g, first) => {
        let prev = first;
        const t0 = now();
        for (let i = 1; i < CHAIN; i++) prev = g.addKernelNode(kernel, config, [prev]);
        return now() - t0;
      }),
  },
  ...(hot !== null
    ? [
        {
          name: 'addon execKernelParamsFromMailbox (raw), one call',
          run: (n: number) => {
            // The update's floor: the mailbox call alone, the node's parameters encoded once, no checks.
            bindNativeSymbol('bench', hot, 'cuGraphExecKernelNodeSetParams_v2');
            const b = kernelNodeBlock(0);
            b.bytes.set(encodeKernelParams({ func: kernel.handle, grid: [1, 1, 1], block: [256, 1, 1], sharedMem: 0, kernelParams: 0n }));
            b.encoded = null;
            const box = mailboxOf(hot);
            const eh = updateExec.handle;
            const nh = updateNode.handle;
            for (let i = 0; i < n; i++) {
              box.u64[MAILBOX.EXEC] = eh;
              box.u64[MAILBOX.NODE] = nh;
              box.u64[MAILBOX.PARAMS] = b.params;
              hot.execKernelParamsFromMailbox();
              if (box.i32[MAILBOX.RESULT] !== 0) throw new Error('update failed');
            }
          },
        },
      ]
    : []),
  {
    name: 'GraphExec.setKernelArgs, one call',
    run: (n) => {
      for (let i = 0; i < n; i++) updateExec.setKernelArgs(updateNode, updateArgs[i & 1]!);
    },
  },
  {
    name: 'GraphExec.setNodeEnabled, one call',
    run: (n) => {
      for (let i = 0; i < n; i++) updateExec.setNodeEnabled(updateNode, (i & 1) !== 0);
    },
  },
];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

// Warm up every column (JIT), then rounds: each column once per round, in a rotating order;
// within a round a column's figure is the median of 5 timed batches.
for (const c of columns) c.run(CALLS);
const perRound = new Map<string, number[]>(columns.map((c) => [c.name, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < columns.length; k++) {
    const c = columns[(k + r) % columns.length]!;
    const batches: number[] = [];
    for (let b = 0; b < 5; b++) {
      const t0 = process.hrtime.bigint();
      const part = c.run(CALLS);
      batches.push(typeof part === 'number' ? part : Number(process.hrtime.bigint() - t0) / CALLS);
    }
    perRound.get(c.name)!.push(median(batches));
  }
}

const rows = columns.map((c) => {
  const xs = perRound.get(c.name)!;
  return { column: c.name, ns: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
});
const cpu = (readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) ?? [])[1] ?? process.arch;
const header = `bench:host — ns per call against a no-op driver; ${ROUNDS} rounds × 5 batches × ${CALLS} calls; ${cpu}, Node ${process.version}; binding: ${binding.active ? 'Node-API addon' : `koffi (${binding.reason})`}`;
process.stdout.write(`${header}\n\n| call | ns per call | [min–max of round medians] |\n|---|---:|---:|\n`);
for (const r of rows) process.stdout.write(`| ${r.column} | ${r.ns.toFixed(1)} | [${r.min.toFixed(1)}–${r.max.toFixed(1)}] |\n`);
// What the construction rows add to C's loop on the same stand-in, round by round: what they add on
// the GPU too, where the driver's own work makes C's column (a ratio to the stand-in's would mean nothing).
const cRow = perRound.get(columns.find((c) => c.name.startsWith('C loop'))!.name)!;
process.stdout.write('\n');
for (const c of columns.filter((c) => c.name.startsWith('Graph.addKernelNode'))) {
  const over = perRound.get(c.name)!.map((x, r) => x - cRow[r]!);
  process.stdout.write(`${c.name}: ${median(over).toFixed(1)} ns a node over C's loop [${Math.min(...over).toFixed(1)}–${Math.max(...over).toFixed(1)}]\n`);
}
if (values.out !== undefined) writeFileSync(values.out, JSON.stringify({ header, rounds: ROUNDS, calls: CALLS, rows, perRound: Object.fromEntries(perRound) }, null, 2) + '\n');
exec.dispose();
updateExec.dispose();
updateGraph.dispose();
prepared.dispose();
preparedKoffi.dispose();
