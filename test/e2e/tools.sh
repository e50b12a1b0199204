#!/usr/bin/env bash
# test/e2e/tools.sh — stock Kubernetes and etcd binaries for the e2e suite, built from the
# Go module proxy through the wrapper modules in test/e2e/tools/{k8s,etcd} and cached in
# /var/cache/minicri-tools/{k8s,etcd}-<version>-<key>/ (the cache only accelerates: a
# missing, incomplete or stale entry is rebuilt; an unwritable cache builds into _output).
#
#   test/e2e/tools.sh [DIR]   ensure the binaries; print the directory that holds
#                             kubelet kube-apiserver kube-controller-manager
#                             kube-scheduler kubectl kube-proxy etcd (DIR: also copy them there)
#
# Environment: K8S_VERSION (default: the version test/e2e/tools/k8s/go.mod requires; another
# version needs its own wrapper test/e2e/tools/k8s-<version>, e.g. K8S_VERSION=v1.37.2 for
# the version-skew check), MINICRI_TOOLS_CACHE (default /var/cache/minicri-tools), GO
# (default go), E2E_BUILD_LOG (default _output/e2e/build-tools.log).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ETCD_VERSION=v3.7.3
K8S_CMDS=(kubelet kube-apiserver kube-controller-manager kube-scheduler kubectl kube-proxy)
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
LOG=${E2E_BUILD_LOG:-$ROOT/_output/e2e/build-tools.log}
mkdir -p "$(dirname "$LOG")"

# shellcheck source=test/e2e/toolslib.sh disable=SC1091
. "$ROOT/test/e2e/toolslib.sh"
k8s_wrapper=$(k8s_wrapper k8s)
K8S_VERSION=$(required_version "$k8s_wrapper" k8s.io/kubernetes)

# The version the binaries report (kubelet --version, the node's kubeletVersion,
# kubectl version), as the release build stamps it (hack/lib/version.sh).
k8s_ldflags() {
	local v=${K8S_VERSION#v} p
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		printf -- ' -X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean' \
			"$p" "$K8S_VERSION" "$p" "${v%%.*}" "$p" "$(cut -d. -f2 <<<"$v")" "$p"
	done
}

k8s_pkgs=()
for c in "${K8S_CMDS[@]}"; do k8s_pkgs+=("k8s.io/kubernetes/cmd/$c"); done
k8s_dir=$(ensure "k8s-$K8S_VERSION" "$k8s_wrapper" "$(k8s_ldflags)" "${k8s_pkgs[@]}")
etcd_dir=$(ensure "etcd-$ETCD_VERSION" "$ROOT/test/e2e/tools/etcd" "" go.etcd.io/etcd/server/v3)

out=${1:-$ROOT/_output/e2e/bin}
mkdir -p "$out"
# Symlinks: the binaries are large and the cache directory is immutable once complete.
for c in "${K8S_CMDS[@]}"; do ln -sfn "$k8s_dir/$c" "$out/$c"; done
ln -sfn "$etcd_dir/server" "$out/etcd"
for c in "${K8S_CMDS[@]}" etcd; do
	[ -x "$out/$c" ] || { log "missing $out/$c"; exit 1; }
done
echo "$out"
