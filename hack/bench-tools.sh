#!/usr/bin/env bash
# hack/bench-tools.sh [DIR] — containerd 2.4 (containerd, containerd-shim-runc-v2) and runc
# for `make bench`'s third runtime, built from the Go module proxy through the wrapper
# modules in test/bench/tools/{containerd,runc} and cached in
# /var/cache/minicri-tools/{containerd,runc}-<version>-<key>/ with test/e2e/toolslib.sh.
# Prints a directory holding containerd, containerd-shim-runc-v2 and runc (DIR: symlinks
# there; default _output/bench/bin2). With BENCH_TOOLS_STARGZ=1 (make bench-lazy) also
# containerd-stargz-grpc, stargz-snapshotter's proxy snapshotter built through
# test/bench/tools/stargz (upstream's command module is not on the module proxy; that
# wrapper's main serves the library's snapshotter), cached the same way.
#
# Environment: MINICRI_TOOLS_CACHE (default /var/cache/minicri-tools), GO (default go),
# E2E_BUILD_LOG (default _output/bench/build-tools.log), BENCH_TOOLS_STARGZ.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CTRD2_VERSION=v2.4.2
RUNC_VERSION=v1.5.3
STARGZ_VERSION=v0.19.1 # the release built against containerd v2.4.2 (its go.mod)
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
. "$(dirname "${BASH_SOURCE[0]}")/goenv.sh"
LOG=${E2E_BUILD_LOG:-$ROOT/_output/bench/build-tools.log}
mkdir -p "$(dirname "$LOG")"

# shellcheck source=test/e2e/toolslib.sh disable=SC1091
. "$ROOT/test/e2e/toolslib.sh"

# containerd: no btrfs headers here (and its snapshotter is disabled in the bench config).
ctrd_dir=$(TOOLS_TAGS="no_btrfs no_devmapper no_zfs" ensure "containerd-$CTRD2_VERSION" \
	"$ROOT/test/bench/tools/containerd" \
	"-X github.com/containerd/containerd/v2/version.Version=$CTRD2_VERSION" \
	github.com/containerd/containerd/v2/cmd/containerd \
	github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)
runc_tags=""
[ -f /usr/include/seccomp.h ] && runc_tags=seccomp
runc_dir=$(TOOLS_TAGS=$runc_tags ensure "runc-$RUNC_VERSION" "$ROOT/test/bench/tools/runc" \
	"-X main.version=${RUNC_VERSION#v}" github.com/opencontainers/runc)

# build_stargz TMP LDFLAGS: ensure_with's builder of the wrapper's main package.
build_stargz() {
	"$GO" build -trimpath -ldflags="$2" -o "$1/containerd-stargz-grpc" .
}

out=${1:-$ROOT/_output/bench/bin2}
mkdir -p "$out"
ln -sfn "$ctrd_dir/containerd" "$out/containerd"
ln -sfn "$ctrd_dir/containerd-shim-runc-v2" "$out/containerd-shim-runc-v2"
ln -sfn "$runc_dir/runc" "$out/runc"
tools=(containerd containerd-shim-runc-v2 runc)
if [ "${BENCH_TOOLS_STARGZ:-0}" = 1 ]; then
	stargz_dir=$(TOOLS_KEY_EXTRA=$(sha256sum <"$ROOT/test/bench/tools/stargz/main.go" | cut -c1-12) \
		ensure_with build_stargz "containerd-stargz-grpc-$STARGZ_VERSION" "$ROOT/test/bench/tools/stargz" "" \
		containerd-stargz-grpc)
	ln -sfn "$stargz_dir/containerd-stargz-grpc" "$out/containerd-stargz-grpc"
	tools+=(containerd-stargz-grpc)
fi
for c in "${tools[@]}"; do
	[ -x "$out/$c" ] || { log "missing $out/$c"; exit 1; }
done
echo "$out"
