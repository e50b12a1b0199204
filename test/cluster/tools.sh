#!/usr/bin/env bash
# test/cluster/tools.sh — the cluster's binaries: Kubernetes (incl. kube-proxy) and etcd from
# test/e2e/tools.sh, and CoreDNS built from the Go module proxy through the wrapper module
# test/cluster/tools/coredns, cached like them in /var/cache/minicri-tools/coredns-<v>-<key>/.
#
#   test/cluster/tools.sh [DIR]   ensure the binaries, link them into DIR (default
#                                 _output/cluster/bin) and print DIR
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
LOG=${E2E_BUILD_LOG:-$ROOT/_output/cluster/build-tools.log}
mkdir -p "$(dirname "$LOG")"
# shellcheck source=test/e2e/toolslib.sh disable=SC1091
. "$ROOT/test/e2e/toolslib.sh"

out=${1:-$ROOT/_output/cluster/bin}
E2E_BUILD_LOG=$LOG "$ROOT/test/e2e/tools.sh" "$out" >/dev/null
wrapper=$ROOT/test/cluster/tools/coredns
version=$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" { print $3 }' "$wrapper/go.mod")
coredns_dir=$(ensure "coredns-$version" "$wrapper" "" minicri.local/cluster/coredns)
ln -sfn "$coredns_dir/coredns" "$out/coredns"
[ -x "$out/coredns" ] || { log "missing $out/coredns"; exit 1; }
echo "$out"
