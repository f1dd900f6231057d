#!/usr/bin/env bash
# On a GPU machine with two or more GPUs (device kind nvidia-h200-x2):
#   bash .device/run.sh bash scripts/gpu-check-nccl.sh
# Builds, runs every GPU test (the NCCL ones included: single-rank, two ranks in one process, two
# processes) with a shortened soak, then bench:nccl. Logs to $OUT; a summary last.
set -uo pipefail
# NVLink multicast off: a program that uses it can put a shared host's GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/gpu-check-nccl}
mkdir -p "$out"
if ! npm run build > "$out/build.log" 2>&1; then tail -40 "$out/build.log"; exit 1; fi
nvidia-smi topo -m > "$out/topo.txt" 2>&1
t0=$SECONDS
SOAK_CYCLES=2000 SOAK_FAILED=200 NCCL_DEBUG=WARN timeout 400 node scripts/run-tests.mjs dist/test/gpu > "$out/gpu.log" 2>&1
gpu_rc=$?; gpu_s=$((SECONDS - t0)); t0=$SECONDS
timeout 150 node dist/bench/nccl.js --iters 100 --rounds 3 --out "$out/nccl-bench.json" > "$out/nccl-bench.log" 2>&1
bench_rc=$?; bench_s=$((SECONDS - t0))
grep -hE '^\s*not ok' "$out/gpu.log" | head -30
grep -hE '^\s*# Subtest: .*nccl|^\s*ok .*(rank|NCCL|nccl|collective)' "$out/gpu.log" | head -40
tail -30 "$out/nccl-bench.log"
echo
echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), node $(node --version)"
echo "gpu tests: rc=$gpu_rc ${gpu_s}s $(grep -E '^# (tests|pass|fail|skipped) ' "$out/gpu.log" | tr '\n' ' ')"
echo "bench:nccl: rc=$bench_rc ${bench_s}s"
