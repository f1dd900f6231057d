#!/usr/bin/env bash
# Builds the Node-API addon of cudagraph's hot path (native/cudagraph_hot.c, native/completion.c) for this machine's
# platform and architecture, into native/prebuilt/<platform>-<arch>/cudagraph_hot.node, the file
# the package ships (npm 11 runs no install scripts, so nothing is compiled on users' machines).
#
#   scripts/build-native.sh           # build (gcc, or $CC)
#   scripts/build-native.sh --check   # build into a temporary file and fail if it differs from the committed one
#
# Beside the addon, <file>.source-sha256 records the hash of the sources it was built from (native/*.h then native/*.c, in name order) (a CPU
# test checks it). No node-gyp: one compiler call against Node's own headers (Node-API version 8, ABI-stable across
# Node >= 20). Reproducible: no build id, no paths or dates in the output, symbols stripped; the
# same compiler version gives the same bytes. Linked against nothing but libc; Node-API symbols are
# resolved from the node process when it loads the addon. It does not link libcuda.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CC="${CC:-gcc}"
NODE_INCLUDE="${NODE_INCLUDE:-/usr/include/node}"
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=linux-x64 ;;
  Linux-aarch64) target=linux-arm64 ;;
  *) echo "build-native: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
if [ ! -f "$NODE_INCLUDE/node_api.h" ]; then
  echo "build-native: $NODE_INCLUDE/node_api.h not found (set NODE_INCLUDE to Node's include/node folder)" >&2
  exit 1
fi

out="native/prebuilt/$target/cudagraph_hot.node"
check=0
if [ "${1:-}" = "--check" ]; then
  check=1
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

# Only old, stable glibc symbol versions: the file must load on any glibc-based Linux of the last decade.
if command -v objdump >/dev/null; then
  newest=$(objdump -T "$out" | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n | tail -1 || true)
  case "$newest" in
    ""|GLIBC_2.2.5|GLIBC_2.14|GLIBC_2.17) ;;
    *) echo "build-native: $out needs $newest; expected nothing newer than GLIBC_2.17" >&2; exit 1 ;;
  esac
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
