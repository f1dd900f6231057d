#!/usr/bin/env bash
# Everything a change needs on a GPU machine in one command; logs go to $OUT, a summary table is
# printed last. `bash scripts/gpu.sh --help` lists the options.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  cat <<'EOF'
Usage: bash scripts/gpu.sh [options]

Builds, then runs every GPU test twice: on the Node-API addon, and on koffi (CUDAGRAPH_NATIVE=0,
with a shortened soak). Logs and result files go to $OUT (default /tmp/cudagraph-gpu); the failed
tests, the benchmarks' tables and a summary table (exit status, seconds, pass/fail/skip per step)
are printed last; the script exits 1 when a step failed. Options add steps:

  --bench [budget]  bench:gpu, stopped after about <budget> seconds (default 90), then bench:pdl
                    (programmatic dependent launch on a chain of short kernels, eager and graphed),
                    bench:await (an awaited round trip's parts and the event loop's delay) and bench:solver (the conjugate-gradient solver in a WHILE node, 5 rounds)
  --pin <cpus>      with --bench (implied): after the unpinned bench:gpu, a second one with every
                    worker pinned to <cpus> (taskset -c); the two runs go to $OUT/unpinned and
                    $OUT/pinned
  --host            bench:host: the hot calls against a no-op stand-in driver, on this CPU
  --cli             the CLI's GPU commands: cudagraph demo, doctor and bench
  --cpu             the CPU suite (npm test)
  --nccl            the two-GPU run (needs two GPUs): the GPU topology, every GPU test once on the
                    default binding (NCCL suites included; soak of 2,000 cycles, NCCL_DEBUG=WARN, at
                    most 400 s) instead of twice, then bench:nccl (--iters 100 --rounds 3, at most 300 s)
  --nccl-tests <checkout>
                    with --nccl (implied): builds NVIDIA's nccl-tests from <checkout> first
                    (scripts/nccl-tests.sh) and runs its all_reduce_perf beside bench:nccl's all-reduce
  -h, --help        this text

Every step runs with NVLink multicast off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1) and with CUDA_TESTS=require unless it is set, so a GPU suite that cannot
reach the driver fails instead of being skipped. The addon run keeps the host-block probe's output
($OUT/host-block-probe.jsonl), the soak's figures ($OUT/soak.json) and the conformance and update
reports ($OUT/conformance.json, $OUT/update.json).

Examples:
  bash scripts/gpu.sh                          # the quick correctness check
  bash scripts/gpu.sh --cpu --cli --bench 90   # the whole verification
  bash scripts/gpu.sh --host --bench 75 --pin 5  # after a change to the hot path
  bash scripts/gpu.sh --nccl                   # on a machine with two GPUs
  bash scripts/gpu.sh --nccl-tests ~/nccl-tests  # the same, nccl-tests' figures beside bench:nccl's
EOF
}

die() { echo "gpu.sh: $*" >&2; exit 2; }

bench='' budget=90 pin='' host=0 cli=0 cpu=0 nccl=0 nccltests=''
while [ $# -gt 0 ]; do
  case $1 in
    --bench)
      bench=1
      if [[ ${2:-} =~ ^[0-9]+$ ]]; then budget=$2; shift; fi ;;
    --pin)
      [ -n "${2:-}" ] && [[ $2 != -* ]] || die "--pin needs a CPU list, e.g. --pin 5 or --pin 4-7"
      pin=$2; bench=1; shift ;;
    --host) host=1 ;;
    --cli) cli=1 ;;
    --cpu) cpu=1 ;;
    --nccl) nccl=1 ;;
    --nccl-tests)
      [ -n "${2:-}" ] && [[ $2 != -* ]] || die "--nccl-tests needs the path of an nccl-tests checkout"
      nccltests=$2; nccl=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (bash scripts/gpu.sh --help lists the options)" ;;
  esac
  shift
done

# A GPU and its driver, before anything is built: without them every step would fail or skip.
if gpus=$(nvidia-smi -L 2>/dev/null); then
  ngpu=$(grep -c '^GPU ' <<<"$gpus")
  [ "$ngpu" -gt 0 ] || die "nvidia-smi lists no GPU.
This script runs the GPU tests and benchmarks on a machine with an NVIDIA GPU; 'npm test' runs the CPU suite anywhere."
  [ "$nccl" = 0 ] || [ "$ngpu" -ge 2 ] || die "--nccl needs two GPUs; nvidia-smi lists $ngpu"
elif ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  echo "gpu.sh: nvidia-smi is not available; libcuda.so.1 is, so the tests will say whether the driver works" >&2
else
  die "no CUDA driver on this machine (no nvidia-smi, and the dynamic loader knows no libcuda.so.1).
This script runs the GPU tests and benchmarks on a machine with an NVIDIA GPU; 'npm test' runs the CPU suite anywhere."
fi

# NVLink multicast off: a program that uses it can put a shared host's GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_TESTS=${CUDA_TESTS:-require}
out=${OUT:-/tmp/cudagraph-gpu}
mkdir -p "$out"
rows=() failed=0

count() { grep -E "^# $2 " "$1" 2>/dev/null | tail -1 | awk '{print $3}'; }
# step <name> <log> <command…>: runs the command with its output appended to the log, and adds a
# row to the summary (the TAP counts when the log has them).
step() {
  local name=$1 log=$2; shift 2
  local t0=$SECONDS
  echo "== $name: $*" >> "$log"
  "$@" >> "$log" 2>&1
  local rc=$? row
  [ "$rc" = 0 ] || failed=1
  row=$(printf '%-24s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")
  [ -z "$(count "$log" pass)" ] || row+=$(printf '  pass=%-4s fail=%-4s skip=%s' "$(count "$log" pass)" "$(count "$log" fail)" "$(count "$log" skipped)")
  rows+=("$row")
}

if ! npm run build > "$out/build.log" 2>&1; then tail -40 "$out/build.log"; exit 1; fi
rm -f "$out/build.log"

logs=()
if [ "$nccl" = 1 ]; then
  nvidia-smi topo -m > "$out/topo.txt" 2>&1
  step "gpu tests (2 GPUs)" "$out/gpu.log" env SOAK_CYCLES=2000 SOAK_FAILED=200 NCCL_DEBUG=WARN \
    timeout 400 node scripts/run-tests.mjs dist/test/gpu
  logs+=("$out/gpu.log")
else
  step "gpu tests (addon)" "$out/gpu-addon.log" env CUDAGRAPH_PROBE_OUT="$out/host-block-probe.jsonl" \
    CUDAGRAPH_SOAK_OUT="$out/soak.json" CONFORMANCE_OUT="$out" node scripts/run-tests.mjs dist/test/gpu
  step "gpu tests (koffi)" "$out/gpu-koffi.log" env CUDAGRAPH_NATIVE=0 SOAK_CYCLES=1000 SOAK_FAILED=100 \
    node scripts/run-tests.mjs dist/test/gpu
  logs+=("$out/gpu-addon.log" "$out/gpu-koffi.log")
fi
if [ "$cpu" = 1 ]; then step "cpu tests" "$out/cpu.log" npm test; logs+=("$out/cpu.log"); fi
if [ "$cli" = 1 ]; then
  step "cli demo" "$out/cli.log" node bin/cudagraph.js demo --out /tmp/cudagraph-demo
  step "cli doctor" "$out/cli.log" node bin/cudagraph.js doctor
  step "cli bench" "$out/cli.log" node bin/cudagraph.js bench
fi
[ "$host" = 0 ] || step "bench:host" "$out/host.md" node dist/bench/host-overhead.js --out "$out/host.json"
benches=()
if [ -n "$bench" ]; then
  if [ -n "$pin" ]; then
    mkdir -p "$out/unpinned" "$out/pinned"
    step "bench:gpu (unpinned)" "$out/unpinned/bench.log" node dist/bench/gpu.js --budget "$budget" --out "$out/unpinned"
    step "bench:gpu (pinned $pin)" "$out/pinned/bench.log" node dist/bench/gpu.js --budget "$budget" --pin "$pin" --out "$out/pinned"
    benches+=("$out/unpinned/bench.log" "$out/pinned/bench.log")
  else
    step "bench:gpu" "$out/bench.log" node dist/bench/gpu.js --budget "$budget" --out "$out"
    benches+=("$out/bench.log")
  fi
fi
# What programmatic dependent launch saves on a chain of short kernels (writes $out/pdl-chain.json).
[ -z "$bench" ] || { step "bench:pdl" "$out/pdl.log" env OUT="$out" timeout 200 node dist/bench/pdl-chain.js; benches+=("$out/pdl.log"); }
# Where an awaited round trip's time goes, and the event loop's delay meanwhile (writes $out/await.json).
[ -z "$bench" ] || { step "bench:await" "$out/await.log" env OUT="$out" timeout 200 node dist/bench/await.js; benches+=("$out/await.log"); }
[ -z "$bench" ] || { step "bench:solver" "$out/solver.log" env OUT="$out" timeout 300 node dist/bench/solver.js --rounds 5; benches+=("$out/solver.log"); }
ncclbench=()
if [ -n "$nccltests" ]; then
  step "build nccl-tests" "$out/nccl-tests-build.log" bash scripts/nccl-tests.sh "$nccltests" "$out/nccl-tests"
  [ ! -x "$out/nccl-tests/all_reduce_perf.sh" ] || ncclbench=(--nccl-tests "$out/nccl-tests/all_reduce_perf.sh")
fi
[ "$nccl" = 0 ] || step "bench:nccl" "$out/nccl-bench.log" \
  timeout 300 node dist/bench/nccl.js --iters 100 --rounds 3 ${ncclbench[@]+"${ncclbench[@]}"} --out "$out/nccl-bench.json"

grep -hE '^\s*not ok' "${logs[@]}" | head -30
if [ "$nccl" = 1 ]; then
  grep -hE '^\s*# Subtest: .*nccl|^\s*ok .*(rank|NCCL|nccl|collective)' "$out/gpu.log" | head -40
  tail -60 "$out/nccl-bench.log"
fi
[ "$host" = 0 ] || cat "$out/host.md"
for log in ${benches[@]+"${benches[@]}"}; do
  echo "== ${log#"$out"/}"; grep -E "targets|missed" "$log"; tail -25 "$log"
done
echo
echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | paste -sd ';' -);$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); node $(node --version)"
printf '%s\n' "${rows[@]}"
exit "$failed"
