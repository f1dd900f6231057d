import { writeFileSync } from 'node:fs';
import { StreamCapture, StreamId, CaptureEvent, MemcpyDir } from './dist/src/index.js';
let seed = 7; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const cap = new StreamCapture();
const S = [0,1,2,3].map(StreamId);
for (const s of S) cap.beginCapture(s);
let ev = 0;
cap.recordMemcpy(S[0], 'upload input', MemcpyDir.HostToDevice, 1<<20);
for (const s of S.slice(1)) { const e = CaptureEvent(ev++); cap.recordEvent(S[0], e); cap.waitEvent(s, e); }
const names = ['gemm','bias','relu','softmax','norm','scale','add','reduce'];
let n = 1;
const has = new Set([0]);
while (n < 49) {
  const s = S[Math.floor(rnd()*4)];
  if (rnd() < 0.2 && n > 4) { const f = S[Math.floor(rnd()*4)]; if (f !== s && has.has(f)) { const e = CaptureEvent(ev++); cap.recordEvent(f, e); cap.waitEvent(s, e);} }
  const r = rnd();
  if (r < 0.75) cap.recordKernel(s, `${names[Math.floor(rnd()*names.length)]}_${n}`, 1+Math.floor(rnd()*64), 256, 0);
  else if (r < 0.85) cap.recordMemset(s, `zero_${n}`, 4096, 0);
  else cap.recordMemcpy(s, `copy_${n}`, MemcpyDir.DeviceToDevice, 8192);
  has.add(s); n++;
}
for (const s of S.slice(1)) { const e = CaptureEvent(ev++); cap.recordEvent(s, e); cap.waitEvent(S[0], e); }
cap.recordMemcpy(S[0], 'download', MemcpyDir.DeviceToHost, 4096);
const g = cap.endCapture(S[0], { requireJoined: true });
writeFileSync('/tmp/g50.json', JSON.stringify(g));
writeFileSync('/tmp/g50.dot', g.toDot({ title: 'g50', highlight: g.criticalPath().nodes }));
console.log(g.nodeCount(), g.edgeCount());
