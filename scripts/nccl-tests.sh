#!/usr/bin/env bash
# Builds NVIDIA's nccl-tests (all_reduce_perf and the rest, without MPI) from a checkout of
# https://github.com/NVIDIA/nccl-tests, against the NCCL this project loads, for this machine's
# GPU architecture only; prints the path of all_reduce_perf last. bench:nccl runs it beside its
# own all-reduce (`--nccl-tests <path>`); `bash scripts/gpu.sh --nccl --nccl-tests <checkout>`
# does both.
#
#   bash scripts/nccl-tests.sh <nccl-tests checkout> [build dir, default <checkout>/build]
#
# NCCL_HOME (a folder with include/nccl.h and lib/libnccl.so*) is found, unless set, next to the
# libnccl that `loadNccl()` finds, or in the nvidia-nccl Python package. CUDA_HOME defaults to the
# folder above the first nvcc on PATH, else /usr/local/cuda.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
die() { echo "nccl-tests.sh: $*" >&2; exit 2; }

src=${1:-}
[ -n "$src" ] || die "usage: bash scripts/nccl-tests.sh <nccl-tests checkout> [build dir]"
[ -f "$src/src/all_reduce.cu" ] || die "$src is not an nccl-tests checkout (no src/all_reduce.cu)"
build=${2:-$src/build}

if [ -z "${CUDA_HOME:-}" ]; then
  if command -v nvcc > /dev/null; then CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")"); else CUDA_HOME=/usr/local/cuda; fi
fi
[ -x "$CUDA_HOME/bin/nvcc" ] || die "no nvcc in $CUDA_HOME/bin (set CUDA_HOME)"

# A folder holding include/nccl.h, from the library's folder upwards.
nccl_home_of() {
  local d=$1
  for _ in 1 2 3; do
    [ -f "$d/include/nccl.h" ] && { echo "$d"; return 0; }
    d=$(dirname "$d")
  done
  return 1
}
if [ -z "${NCCL_HOME:-}" ]; then
  lib=$(node -e "import('./dist/src/index.js').then((m) => console.log(m.loadNccl().path)).catch(() => {})" 2>/dev/null || true)
  [ -z "$lib" ] || NCCL_HOME=$(nccl_home_of "$(dirname "$(readlink -f "$lib")")" || true)
fi
if [ -z "${NCCL_HOME:-}" ]; then
  pkg=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  [ -z "$pkg" ] || NCCL_HOME=$(nccl_home_of "$pkg/lib" || true)
fi
[ -n "${NCCL_HOME:-}" ] || die "no NCCL headers found (set NCCL_HOME to a folder with include/nccl.h and lib/libnccl.so*)"
# The link step wants lib/libnccl.so, which the Python package does not ship (only .so.2): build
# against a folder of links to the headers and the library.
mkdir -p "$build/nccl-home/lib"
build=$(readlink -f "$build")
ln -sfn "$NCCL_HOME/include" "$build/nccl-home/include"
so2=$(ls "$NCCL_HOME"/lib/libnccl.so.2* 2>/dev/null | head -1 || true)
[ -n "$so2" ] || so2="$NCCL_HOME/lib/libnccl.so"
[ -e "$so2" ] || die "no libnccl.so.2 in $NCCL_HOME/lib"
ln -sf "$(readlink -f "$so2")" "$build/nccl-home/lib/libnccl.so"
ln -sf "$(readlink -f "$so2")" "$build/nccl-home/lib/libnccl.so.2"

cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[ -n "$cc" ] || cc=90
echo "nccl-tests.sh: CUDA_HOME=$CUDA_HOME NCCL_HOME=$NCCL_HOME sm_$cc -> $build" >&2
make -C "$src" -j"$(nproc)" MPI=0 CUDA_HOME="$CUDA_HOME" NCCL_HOME="$build/nccl-home" BUILDDIR="$build" \
  NVCC_GENCODE="-gencode=arch=compute_$cc,code=sm_$cc" > "$build/make.log" 2>&1 \
  || { tail -30 "$build/make.log" >&2; die "make failed (log: $build/make.log)"; }
[ -x "$build/all_reduce_perf" ] || die "make ran but $build/all_reduce_perf is missing (log: $build/make.log)"
# The binary finds the same libnccl at run time through a wrapper (nothing installed).
cat > "$build/all_reduce_perf.sh" <<WRAP
#!/usr/bin/env bash
export LD_LIBRARY_PATH="$build/nccl-home/lib:$CUDA_HOME/lib64\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$build/all_reduce_perf" "\$@"
WRAP
chmod +x "$build/all_reduce_perf.sh"
echo "$build/all_reduce_perf.sh"
