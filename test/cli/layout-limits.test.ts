/** The size estimate and the PNG limit of src/cli/layout-limits.ts (render's refusals are in render-limits.test.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ComputeGraph, NodeId } from '../../src/index.js';
import { LAYOUT_MAX_NODES, PNG_MAX_PIXELS, layoutSize, refuseLargePng } from '../../src/cli/layout-limits.js';
import { svgToPng } from '../../src/cli/picture.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { minimalFont } from './helpers.js';

test('layoutSize: the nodes plus a bend for every level an edge skips', () => {
  const g = new ComputeGraph();
  for (let i = 0; i < 5; i++) g.addNode({ kind: 'empty' });
  assert.equal(layoutSize(g), 5, 'no edges');
  g.addEdges([[NodeId(0), NodeId(1)], [NodeId(1), NodeId(2)], [NodeId(2), NodeId(3)]]);
  assert.equal(layoutSize(g), 5, 'a chain bends nowhere');
  g.addEdge(NodeId(0), NodeId(3)); // levels 0 → 3: two bends
  g.addEdge(NodeId(0), NodeId(4)); // node 4 is on level 1: none
  assert.equal(layoutSize(g), 7);
  assert.equal(layoutSize(new ComputeGraph()), 0);
  assert.ok(LAYOUT_MAX_NODES < 11_000 / 2, 'under half the smallest measured overflow');
});

test('a PNG past the rasteriser\'s memory is refused before it is drawn, saying which --scale fits', async () => {
  assert.doesNotThrow(() => refuseLargePng(228, 720_098 / 2, 1.5));
  assert.throws(() => refuseLargePng(20_000, 20_000, 1.5), (e: unknown) => e instanceof UsageError && /pass --scale 0\.86 or less, or write SVG/.test(e.message));
  assert.throws(() => refuseLargePng(2 ** 21, 10, 1.5), (e: unknown) => e instanceof UsageError && /1,048,576 a side/.test(e.message));
  assert.throws(() => refuseLargePng(1e6, 1e6, 1), (e: unknown) => e instanceof UsageError && /write SVG \(-o <name>\.svg\) instead$/.test(e.message));
  // An SVG of 100,000 × 100,000 points: refused before resvg allocates a pixel.
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="100000pt" height="100000pt"><rect width="10" height="10"/></svg>';
  await assert.rejects(svgToPng(svg, { font: { path: 'test', bytes: minimalFont() } }), (e: unknown) => e instanceof UsageError && e.message.includes(`at most ${PNG_MAX_PIXELS.toLocaleString('en-US')} pixels`));
});
