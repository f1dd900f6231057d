#!/usr/bin/env bash
# Builds the Node-API addon of cudagraph's hot path (native/cudagraph_hot.c, native/completion.c) for one
# Linux architecture, into native/prebuilt/<platform>-<arch>/cudagraph_hot.node, the file the package
# ships (npm 11 runs no install scripts, so nothing is compiled on users' machines).
#
#   scripts/build-native.sh                        # build for this machine (gcc, or $CC)
#   scripts/build-native.sh --target linux-arm64   # cross-build (aarch64-linux-gnu-gcc, or $CC)
#   scripts/build-native.sh --check                # build into a temporary file and fail if it differs from the committed one
#   scripts/build-native.sh --all [--check]        # every target in TARGETS below
#
# Targets: linux-x64 and linux-arm64. The compiler of this machine's own target is gcc; of the other,
# Debian's cross compiler (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross on x64, or
# gcc-x86-64-linux-gnu libc6-dev-amd64-cross on arm64). $CC overrides either (one target at a time).
#
# Beside the addon, <file>.source-sha256 records the hash of the sources it was built from (native/*.h
# then native/*.c, in name order) (a CPU test checks it). No node-gyp: one compiler call against Node's
# own headers (Node-API version 8, ABI-stable across Node >= 20; the headers are the same for every
# architecture). Reproducible: no build id, no paths or dates in the output, symbols stripped; the same
# compiler version gives the same bytes. Linked against nothing but libc, with no glibc symbol version
# newer than GLIBC_2.17 (checked below: the file must load on any glibc-based Linux of the last decade;
# 2.17 is also the oldest glibc of arm64); Node-API symbols are resolved from the node process when it
# loads the addon. It does not link libcuda.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TARGETS="linux-x64 linux-arm64"
NODE_INCLUDE="${NODE_INCLUDE:-/usr/include/node}"
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) host=linux-x64 ;;
  Linux-aarch64) host=linux-arm64 ;;
  *) echo "build-native: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

target="$host"
check=0
all=0
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --all) all=1 ;;
    --target) target="${2:-}"; shift ;;
    *) echo "build-native: unknown argument $1 (--target <$(echo "$TARGETS" | tr ' ' '|')>, --all, --check)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$all" = 1 ]; then
  [ -z "${CC:-}" ] || { echo "build-native: --all picks each target's compiler; unset CC" >&2; exit 2; }
  rc=0
  for t in $TARGETS; do
    args=(--target "$t"); [ "$check" = 1 ] && args+=(--check)
    bash "$0" "${args[@]}" || rc=1
  done
  exit "$rc"
fi

# The ELF machine (as readelf names it) and the cross compiler of each target.
case "$target" in
  linux-x64) machine="Advanced Micro Devices X86-64"; cross=x86_64-linux-gnu-gcc ;;
  linux-arm64) machine="AArch64"; cross=aarch64-linux-gnu-gcc ;;
  *) echo "build-native: unknown target '$target' (expected one of: $TARGETS)" >&2; exit 2 ;;
esac
if [ -n "${CC:-}" ]; then :; elif [ "$target" = "$host" ]; then CC=gcc; else CC="$cross"; fi
if ! command -v "$CC" >/dev/null; then
  echo "build-native: $CC not found (the compiler for $target; set CC)" >&2
  exit 1
fi
if [ ! -f "$NODE_INCLUDE/node_api.h" ]; then
  echo "build-native: $NODE_INCLUDE/node_api.h not found (set NODE_INCLUDE to Node's include/node folder)" >&2
  exit 1
fi

out="native/prebuilt/$target/cudagraph_hot.node"
if [ "$check" = 1 ]; then
  committed="$out"
  out="$(mktemp --suffix=.node)"
  trap 'rm -f "$out"' EXIT
fi
mkdir -p "$(dirname "$out")"

"$CC" -std=c11 -O2 -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror \
  -I"$NODE_INCLUDE" \
  -ffile-prefix-map="$PWD"=. -fno-ident \
  -Wl,--build-id=none -Wl,-s \
  -o "$out" native/cudagraph_hot.c native/completion.c

# What the file is: the target's machine, only libc needed, only old glibc symbol versions, the
# Node-API entry point exported. readelf reads any architecture's ELF.
header=$(readelf -h "$out")
if ! grep -q "Machine: *$machine\$" <<<"$header"; then
  echo "build-native: $out is not a $machine ELF file ($CC builds $(grep Machine <<<"$header" | sed 's/.*: *//'))" >&2
  exit 1
fi
needed=$(readelf -dW "$out" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
if [ "$needed" != "libc.so.6 " ]; then
  echo "build-native: $out needs ${needed:-nothing}; expected libc.so.6 alone" >&2
  exit 1
fi
newest=$(readelf -VW "$out" | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n | tail -1 || true)
case "$newest" in
  ""|GLIBC_2.2.5|GLIBC_2.14|GLIBC_2.17) ;;
  *) echo "build-native: $out needs $newest; expected nothing newer than GLIBC_2.17" >&2; exit 1 ;;
esac
if ! readelf --dyn-syms -W "$out" | grep -Eq ' FUNC +GLOBAL +DEFAULT +[0-9]+ napi_register_module_v1$'; then
  echo "build-native: $out does not export napi_register_module_v1" >&2
  exit 1
fi

if [ "$check" = 1 ]; then
  if cmp -s "$out" "$committed"; then
    echo "build-native: $committed is up to date ($(sha256sum "$committed" | cut -d' ' -f1))"
  else
    echo "build-native: $committed differs from a fresh build with $("$CC" --version | head -1)" >&2
    exit 1
  fi
else
  # What the CPU tests compare with the source, so that an edit without a rebuild is caught.
  cat native/*.h native/*.c | sha256sum | cut -d' ' -f1 >"$out.source-sha256"
  echo "build-native: wrote $out ($(wc -c <"$out") bytes, sha256 $(sha256sum "$out" | cut -d' ' -f1)) with $("$CC" --version | head -1)"
fi
