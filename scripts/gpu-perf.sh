#!/usr/bin/env bash
# The performance check in one device call, after a change to the hot path:
#   bash .device/run.sh bash scripts/gpu-perf.sh [bench-budget-seconds] [pin-cpus]
# Builds; runs every GPU test on both bindings (the hot path must stay correct); bench:host on the
# device's CPU (the calls' own cost against a no-op driver); bench:gpu unpinned, then, when a CPU list
# is given, bench:gpu again with every worker pinned to it (taskset). At most 7 files go to $OUT;
# a summary is printed last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/gpu-perf}
budget=${1:-75}
pin=${2:-}
mkdir -p "$out/unpinned" "$out/pinned"
if ! npm run build > "$out/build.log" 2>&1; then tail -40 "$out/build.log"; exit 1; fi
rm -f "$out/build.log"
node scripts/run-tests.mjs dist/test/gpu > "$out/gpu-addon.log" 2>&1; a=$?
CUDAGRAPH_NATIVE=0 SOAK_CYCLES=1000 SOAK_FAILED=100 node scripts/run-tests.mjs dist/test/gpu > "$out/gpu-koffi.log" 2>&1; k=$?
node dist/bench/host-overhead.js --out "$out/host.json" > /tmp/host.md 2>&1; h=$?
node dist/bench/gpu.js --budget "$budget" --out "$out/unpinned" > /tmp/bench-unpinned.log 2>&1; b=$?
p=skipped
if [ -n "$pin" ]; then
  node dist/bench/gpu.js --budget "$budget" --pin "$pin" --out "$out/pinned" > /tmp/bench-pinned.log 2>&1; p=$?
fi
grep -hE '^\s*not ok' "$out"/gpu-*.log | head -20
cat /tmp/host.md
echo "== bench:gpu unpinned"; grep -E "targets|missed" /tmp/bench-unpinned.log; tail -24 /tmp/bench-unpinned.log
if [ -n "$pin" ]; then echo "== bench:gpu pinned to $pin"; grep -E "targets|missed" /tmp/bench-pinned.log; tail -24 /tmp/bench-pinned.log; fi
echo
echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), node $(node --version)"
echo "gpu tests addon: rc=$a $(grep -E '^# (pass|fail|skipped) ' "$out/gpu-addon.log" | tr '\n' ' ')"
echo "gpu tests koffi: rc=$k $(grep -E '^# (pass|fail|skipped) ' "$out/gpu-koffi.log" | tr '\n' ' ')"
echo "bench:host rc=$h; bench:gpu unpinned rc=$b; pinned ($pin) rc=$p"
