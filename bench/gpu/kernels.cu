// The two kernels every benchmark worker launches (C, CuPy and cudagraph load the same PTX,
// kernels.ptx, generated from this file; PyTorch uses its own x.add_(1)). Regenerate with:
//   nvcc -ptx -arch=compute_90 -o bench/gpu/kernels.ptx bench/gpu/kernels.cu
// compute_90 PTX: the driver JIT-compiles it for the GPU at load time (H200 is sm_90).

// No work and no arguments: the launch is pure overhead.
extern "C" __global__ void empty() {}

// Two arguments, so the launch carries a kernel-argument array (what PreparedLaunch packs once).
// Launched as grid 1, block 256 on 256 floats: the same work as PyTorch's x.add_(1).
extern "C" __global__ void add2(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}
