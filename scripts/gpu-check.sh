#!/usr/bin/env bash
# The whole GPU verification in one device call (see README "Working on the GPU"):
#   bash .device/run.sh bash scripts/gpu-check.sh [bench-budget-seconds]
# Builds, runs every GPU test on both bindings (native addon, then koffi), the CLI's GPU commands,
# and bench:gpu. Logs go to $OUT (at most 8 files come back); a summary table is printed last.
set -uo pipefail
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
budget=${1:-90}
rows=()

count() { grep -E "^# $2 " "$1" 2>/dev/null | tail -1 | awk '{print $3}'; }
step() {
  local name=$1 log=$2; shift 2
  local t0=$SECONDS
  echo "== $name: $*" >> "$log"
  "$@" >> "$log" 2>&1
  local rc=$?
  rows+=("$(printf '%-22s rc=%-3s %4ss  pass=%-4s fail=%-4s skip=%s' "$name" "$rc" "$((SECONDS - t0))" \
    "$(count "$log" pass)" "$(count "$log" fail)" "$(count "$log" skipped)")")
}

if ! npm run build > "$out/build.log" 2>&1; then tail -40 "$out/build.log"; exit 1; fi
step "gpu tests (addon)" "$out/gpu-addon.log" env CUDAGRAPH_SOAK_OUT="$out/soak.json" node scripts/run-tests.mjs dist/test/gpu
step "gpu tests (koffi)" "$out/gpu-koffi.log" env CUDAGRAPH_NATIVE=0 SOAK_CYCLES=1000 SOAK_FAILED=100 node scripts/run-tests.mjs dist/test/gpu
step "cpu tests" "$out/cpu.log" npm test
step "cli demo" "$out/cli.log" node bin/cudagraph.js demo --out /tmp/cudagraph-demo
step "cli doctor" "$out/cli.log" node bin/cudagraph.js doctor
step "cli bench" "$out/cli.log" node bin/cudagraph.js bench
step "bench:gpu" "$out/bench.log" node dist/bench/gpu.js --budget "$budget" --out "$out"

grep -hE '^\s*not ok' "$out"/gpu-*.log "$out"/cpu.log | head -20
tail -25 "$out/bench.log"
echo
echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), node $(node --version)"
printf '%s\n' "${rows[@]}"
