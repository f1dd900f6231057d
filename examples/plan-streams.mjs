// Plan GPU work on the CPU, no GPU needed: record a pipeline over three streams in the model, then
// ask what a scheduler asks — what can run together, what bounds the time, which streams wait.
//
//   npm ci && npm run build && node examples/plan-streams.mjs
//
// The costs are made-up microseconds per node; the model's answers follow from them exactly.
import { CaptureEvent, MemcpyDir, StreamCapture, StreamId } from 'cudagraph';

const cap = new StreamCapture();
const [main, left, right] = [StreamId(0), StreamId(1), StreamId(2)];
for (const s of [main, left, right]) cap.beginCapture(s);

const cost = new Map();
const at = (id, us) => (cost.set(id, us), id);

at(cap.recordMemcpy(main, 'upload', MemcpyDir.HostToDevice, 1 << 20), 40);
// Fork: both side streams start after the upload.
cap.recordEvent(main, CaptureEvent(0));
cap.waitEvent(left, CaptureEvent(0));
cap.waitEvent(right, CaptureEvent(0));
at(cap.recordKernel(left, 'attention', 132, 256, 0), 120);
at(cap.recordKernel(left, 'softmax', 132, 256, 0), 30);
at(cap.recordKernel(right, 'mlp_up', 132, 256, 0), 90);
at(cap.recordKernel(right, 'mlp_down', 132, 256, 0), 90);
// Join: the main stream waits for both branches, then downloads.
cap.recordEvent(left, CaptureEvent(1));
cap.recordEvent(right, CaptureEvent(2));
cap.waitEvent(main, CaptureEvent(1));
cap.waitEvent(main, CaptureEvent(2));
at(cap.recordMemcpy(main, 'download', MemcpyDir.DeviceToHost, 1 << 20), 40);
const graph = cap.endCapture(main);

const name = (id) => graph.node(id).name;
const levels = graph.levels().map((ids) => ids.map(name).join(' | '));
const path = graph.criticalPath((n) => cost.get(n.id) ?? 0);
console.log(`${graph.nodeCount()} nodes, ${graph.edgeCount()} edges on ${graph.streams().length} streams`);
levels.forEach((l, i) => console.log(`level ${i}: ${l}`));
console.log(`critical path: ${path.nodes.map(name).join(' → ')} (${path.cost} µs)`);
console.log(`attention before download: ${graph.isReachable(graph.nodes().find((n) => n.name === 'attention').id, graph.nodes().find((n) => n.name === 'download').id)}`);
