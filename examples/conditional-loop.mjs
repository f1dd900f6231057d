// A loop that runs on the GPU until a kernel ends it: one WHILE node, one graph launch.
//
//   npm ci && npm run build && node examples/conditional-loop.mjs     (needs a CUDA 12.4+ driver)
//
// The kernel halves x and counts the rounds; on the GPU it decides whether the loop goes on
// (cudagraph's CONDITIONAL_DEVICE_API declares cudaGraphSetConditional for NVRTC). The host
// launches the captured graph once and reads the count back: 1000 needs 10 halvings to drop below 1.
// docs/conditional.md explains the API; `npx cudagraph demo solver` is a whole solver built this way.
import { CONDITIONAL_DEVICE_API, Device, DeviceBuffer, Module, captureGraph } from 'cudagraph';

const device = Device.get(0);
const stream = device.createStream();
const kernels = Module.compile(
  device,
  CONDITIONAL_DEVICE_API +
    `extern "C" __global__ void halve(float *x, unsigned int *rounds, unsigned long long h) {
       x[0] *= 0.5f;
       rounds[0] += 1;
       cudaGraphSetConditional(h, x[0] >= 1.0f ? 1u : 0u);
     }`,
);
const halve = kernels.function('halve');
const x = DeviceBuffer.alloc(device, 4);
const rounds = DeviceBuffer.alloc(device, 4);

const loop = captureGraph(stream, (s) => {
  const h = s.conditionalHandle({ default: 1 }); // every launch starts with the loop's condition at 1
  s.captureWhile(h, (body) => halve.launch(body, { grid: 1, block: 1, args: [x, rounds, h.arg()] }));
});

for (const start of [1000, 3, 0.5]) {
  x.copyFromHost(new Float32Array([start]));
  rounds.copyFromHost(new Uint32Array([0]));
  loop.launch();
  stream.synchronize();
  const out = new Uint32Array(1);
  rounds.copyToHost(out);
  console.log(`x = ${start}: ${out[0]} rounds`);
}
loop.dispose();
for (const b of [x, rounds]) b.dispose();
kernels.dispose();
stream.dispose();
