#!/usr/bin/env bash
# Every GPU test on both bindings (native addon, then koffi with a shortened soak), without the
# benchmarks: the quick check after a change. bash .device/run.sh bash scripts/gpu-tests-both.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/gpu-tests-both}
mkdir -p "$out"
if ! npm run build > "$out/build.log" 2>&1; then tail -40 "$out/build.log"; exit 1; fi
CUDAGRAPH_PROBE_OUT="$out/host-block-probe.jsonl" CUDAGRAPH_SOAK_OUT="$out/soak.json" node scripts/run-tests.mjs dist/test/gpu > "$out/gpu-addon.log" 2>&1; a=$?
CUDAGRAPH_NATIVE=0 SOAK_CYCLES=1000 SOAK_FAILED=100 node scripts/run-tests.mjs dist/test/gpu > "$out/gpu-koffi.log" 2>&1; k=$?
grep -hE '^\s*not ok' "$out"/gpu-*.log | head -20
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader | tr '\n' ' ')node $(node --version)"
echo "addon: rc=$a $(grep -E '^# (pass|fail|skipped) ' "$out/gpu-addon.log" | tr '\n' ' ')"
echo "koffi: rc=$k $(grep -E '^# (pass|fail|skipped) ' "$out/gpu-koffi.log" | tr '\n' ' ')"
