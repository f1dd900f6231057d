/**
 * The schedule methods run the user's `costOf` in the middle of a call: it cannot change the graph
 * (GRAPH_BUSY, the call goes on with the graph as it was), and sums that overflow are refused
 * (GRAPH_COST_OVERFLOW) instead of answering Infinity, NaN and wrong critical flags. Each case runs
 * in a worker with a deadline: a regression that loops for ever fails instead of hanging the suite.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { ComputeGraph, GraphError, NodeId, type GraphNode } from '../../src/index.js';

const INDEX = new URL('../../src/index.js', import.meta.url).href;

/**
 * Runs `body` (the text of an async function of the package's exports) in a worker and returns
 * what it returns (JSON), or fails the test when it throws, runs past `ms` or runs out of memory.
 */
async function inWorker(body: string, ms = 10_000): Promise<unknown> {
  const source = `
    const { parentPort } = await import('node:worker_threads');
    const api = await import(${JSON.stringify(INDEX)});
    try { parentPort.postMessage({ ok: true, value: await (${body})(api) }); }
    catch (e) { parentPort.postMessage({ ok: false, error: String(e && e.stack || e) }); }`;
  const worker = new Worker(source, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 256 } });
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`still running after ${ms} ms: the call loops for ever`)), ms);
      worker.once('message', (m: { ok: boolean; value?: unknown; error?: string }) => {
        clearTimeout(timer);
        if (m.ok) resolve(m.value);
        else reject(new Error(m.error));
      });
      worker.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  } finally {
    await worker.terminate();
  }
}

test('a costOf that adds a node, adds an edge or adds edges is refused with GRAPH_BUSY; the graph and the result are as before', async () => {
  const out = (await inWorker(`async ({ ComputeGraph, GraphError, NodeId }) => {
    const make = () => {
      const g = new ComputeGraph();
      for (let i = 0; i < 4; i++) g.addNode({ kind: 'empty', cost: i + 1 });
      g.addEdges([[NodeId(0), NodeId(1)], [NodeId(1), NodeId(3)], [NodeId(0), NodeId(2)]]);
      return g;
    };
    const rows = [];
    const changes = {
      addNode: (g) => g.addNode({ kind: 'empty' }),
      addEdge: (g) => g.addEdge(NodeId(2), NodeId(3)),
      addEdges: (g) => g.addEdges([[NodeId(2), NodeId(3)]]),
    };
    const calls = {
      criticalPath: (g, f) => g.criticalPath(f),
      timing: (g, f) => g.timing(f),
      boundedMakespan: (g, f) => g.boundedMakespan(2, f),
    };
    for (const [change, mutate] of Object.entries(changes)) {
      for (const [call, run] of Object.entries(calls)) {
        const g = make();
        const before = JSON.stringify(g);
        let error = null;
        try { run(g, (n) => { mutate(g); return n.cost; }); } catch (e) {
          error = { graphError: e instanceof GraphError, kind: e.kind, code: e.code, message: e.message };
        }
        // A costOf that catches the refusal gets the answer of the unchanged graph.
        const caught = run(g, (n) => { try { mutate(g); } catch {} return n.cost; });
        rows.push({ change, call, error, unchanged: JSON.stringify(g) === before, same: JSON.stringify(caught) === JSON.stringify(run(make())) });
      }
    }
    return rows;
  }`)) as { change: string; call: string; error: { graphError: boolean; kind: string; code: string; message: string } | null; unchanged: boolean; same: boolean }[];
  assert.equal(out.length, 9);
  for (const r of out) {
    const what = `${r.call} with a costOf that calls ${r.change}`;
    assert.ok(r.error !== null, `${what}: refused`);
    assert.ok(r.error.graphError && r.error.kind === 'Internal' && r.error.code === 'GRAPH_BUSY', `${what}: ${JSON.stringify(r.error)}`);
    assert.ok(
      r.error.message.startsWith(`ComputeGraph.${r.change}: the graph cannot change while ComputeGraph.${r.call} (its costOf callback is running)`),
      r.error.message,
    );
    assert.ok(r.unchanged, `${what}: the graph is unchanged`);
    assert.ok(r.same, `${what}: the answer is that of the unchanged graph`);
  }
});

test('an addEdges iterable that changes the graph is refused with GRAPH_BUSY and adds nothing', async () => {
  const out = (await inWorker(`async ({ ComputeGraph, NodeId }) => {
    const g = new ComputeGraph();
    g.addNode({ kind: 'empty' });
    g.addNode({ kind: 'empty' });
    function* edges() { g.addNode({ kind: 'empty' }); yield [NodeId(0), NodeId(1)]; }
    try { g.addEdges(edges()); return { refused: false }; } catch (e) {
      return { refused: true, code: e.code, message: e.message, nodes: g.nodeCount(), edges: g.edgeCount() };
    }
  }`)) as { refused: boolean; code: string; message: string; nodes: number; edges: number };
  assert.deepEqual([out.refused, out.code, out.nodes, out.edges], [true, 'GRAPH_BUSY', 2, 0]);
  assert.match(out.message, /^ComputeGraph\.addNode: the graph cannot change while ComputeGraph\.addEdges \(its edges iterable is running\)/);
});

test('reading the graph from costOf is fine (the same graph, nested calls included)', () => {
  const g = new ComputeGraph();
  const a = g.addNode({ kind: 'empty', cost: 2 });
  const b = g.addNode({ kind: 'empty', cost: 3 });
  g.addEdge(a, b);
  const cost = (n: GraphNode): number => g.node(n.id).cost * g.criticalPath().nodes.length;
  assert.equal(g.criticalPath(cost).cost, 10);
  assert.equal(g.timing(cost).length, 10);
  g.addNode({ kind: 'empty' }); // and the graph can change again afterwards
  assert.equal(g.nodeCount(), 3);
});

/** `call` throws GRAPH_COST_OVERFLOW naming `op`. */
function overflows(call: () => unknown, op: string): void {
  assert.throws(call, (e: unknown) => {
    assert.ok(e instanceof GraphError, String(e));
    assert.deepEqual([e.kind, e.code], ['ValidationFailed', 'GRAPH_COST_OVERFLOW']);
    assert.ok(e.message.startsWith(`${op}: the costs `), e.message);
    assert.match(e.message, /add up to more than the largest number/);
    return true;
  });
}

test('costs whose sum overflows are refused with GRAPH_COST_OVERFLOW, not answered with Infinity or NaN', () => {
  // A chain of three nodes of 1e308: every path sum beyond the first node overflows.
  const chain = new ComputeGraph();
  for (let i = 0; i < 3; i++) chain.addNode({ kind: 'empty', cost: 1e308 });
  chain.addEdges([[NodeId(0), NodeId(1)], [NodeId(1), NodeId(2)]]);
  overflows(() => chain.criticalPath(), 'ComputeGraph.criticalPath');
  overflows(() => chain.timing(), 'ComputeGraph.timing');
  overflows(() => chain.boundedMakespan(2), 'ComputeGraph.boundedMakespan');
  // The same through costOf.
  const small = new ComputeGraph();
  for (let i = 0; i < 3; i++) small.addNode({ kind: 'empty' });
  small.addEdges([[NodeId(0), NodeId(1)], [NodeId(1), NodeId(2)]]);
  overflows(() => small.criticalPath(() => 1e308), 'ComputeGraph.criticalPath');
  overflows(() => small.timing(() => 1e308), 'ComputeGraph.timing');
  overflows(() => small.boundedMakespan(1, () => 1e308), 'ComputeGraph.boundedMakespan');

  // Two parallel nodes of 1e308: each path is finite (the critical path and the timing are
  // answered, and both nodes are critical), but the total is not (the schedule is refused).
  const wide = new ComputeGraph();
  wide.addNode({ kind: 'empty', cost: 1e308 });
  wide.addNode({ kind: 'empty', cost: 1e308 });
  assert.equal(wide.criticalPath().cost, 1e308);
  const t = wide.timing();
  assert.equal(t.length, 1e308);
  assert.deepEqual(t.nodes.map((x) => [x.asap, x.slack, x.critical]), [[0, 0, true], [0, 0, true]]);
  overflows(() => wide.boundedMakespan(2), 'ComputeGraph.boundedMakespan');
  // Near the limit but finite: exact answers.
  const big = new ComputeGraph();
  big.addNode({ kind: 'empty', cost: 8e307 });
  big.addNode({ kind: 'empty', cost: 8e307 });
  big.addEdge(NodeId(0), NodeId(1));
  assert.equal(big.criticalPath().cost, 1.6e308);
  assert.equal(big.boundedMakespan(2).makespan, 1.6e308);
  assert.ok(big.timing().nodes.every((x) => x.critical && Number.isFinite(x.alap)));
});
