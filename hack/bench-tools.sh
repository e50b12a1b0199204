#!/usr/bin/env bash
# hack/bench-tools.sh [DIR] — containerd 2.4 (containerd, containerd-shim-runc-v2) and runc
# for `make bench`'s third runtime, built from the Go module proxy through the wrapper
# modules in test/bench/tools/{containerd,runc} and cached in
# /var/cache/minicri-tools/{containerd,runc}-<version>-<key>/ with test/e2e/toolslib.sh.
# Prints a directory holding containerd, containerd-shim-runc-v2 and runc (DIR: symlinks
# there; default _output/bench/bin2).
#
# Environment: MINICRI_TOOLS_CACHE (default /var/cache/minicri-tools), GO (default go),
# E2E_BUILD_LOG (default _output/bench/build-tools.log).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CTRD2_VERSION=v2.4.2
RUNC_VERSION=v1.5.3
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
export PATH=$PATH:/usr/local/go/bin
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

out=${1:-$ROOT/_output/bench/bin2}
mkdir -p "$out"
ln -sfn "$ctrd_dir/containerd" "$out/containerd"
ln -sfn "$ctrd_dir/containerd-shim-runc-v2" "$out/containerd-shim-runc-v2"
ln -sfn "$runc_dir/runc" "$out/runc"
for c in containerd containerd-shim-runc-v2 runc; do
	[ -x "$out/$c" ] || { log "missing $out/$c"; exit 1; }
done
echo "$out"
