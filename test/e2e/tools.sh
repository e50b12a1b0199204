#!/usr/bin/env bash
# test/e2e/tools.sh — stock Kubernetes and etcd binaries for the e2e suite, built from the
# Go module proxy through the wrapper modules in test/e2e/tools/{k8s,etcd} and cached in
# /var/cache/minicri-tools/{k8s,etcd}-<version>-<key>/ (the cache only accelerates: a
# missing, incomplete or stale entry is rebuilt; an unwritable cache builds into _output).
#
#   test/e2e/tools.sh [DIR]   ensure the binaries; print the directory that holds
#                             kubelet kube-apiserver kube-controller-manager
#                             kube-scheduler kubectl etcd (DIR: also copy them there)
#
# Environment: MINICRI_TOOLS_CACHE (default /var/cache/minicri-tools), GO (default go),
# E2E_BUILD_LOG (default _output/e2e/build-tools.log).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
K8S_CMDS=(kubelet kube-apiserver kube-controller-manager kube-scheduler kubectl)
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
export PATH=$PATH:/usr/local/go/bin
LOG=${E2E_BUILD_LOG:-$ROOT/_output/e2e/build-tools.log}
mkdir -p "$(dirname "$LOG")"

log() { echo "e2e-tools: $*" >&2; }

# The version the binaries report (kubelet --version, the node's kubeletVersion,
# kubectl version), as the release build stamps it (hack/lib/version.sh).
k8s_ldflags() {
	local v=${K8S_VERSION#v} p
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		printf -- ' -X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean' \
			"$p" "$K8S_VERSION" "$p" "${v%%.*}" "$p" "$(cut -d. -f2 <<<"$v")" "$p"
	done
}

# key WRAPPER_DIR LDFLAGS: changes whenever the pinned versions (go.mod/go.sum), the
# flags or Go change.
key() {
	{ cat "$1/go.mod" "$1/go.sum"; echo "$2"; "$GO" env GOVERSION GOARCH; } | sha256sum | cut -c1-12
}

# ensure NAME WRAPPER_DIR LDFLAGS PKG... : prints the directory holding the built commands.
ensure() {
	local name=$1 wrapper=$2 ldflags="-s -w $3" k dir tmp start pkgs=() p
	shift 3
	pkgs=("$@")
	k=$(key "$wrapper" "$ldflags")
	dir=$CACHE_DIR/$name-$k
	if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$name-$k" ]; then
		local ok=1
		for p in "${pkgs[@]}"; do [ -x "$dir/$(cmdname "$p")" ] || ok=0; done
		if [ $ok = 1 ]; then
			log "$name: cached in $dir"
			echo "$dir"
			return 0
		fi
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/e2e-build.XXXXX")
	log "$name: building ${pkgs[*]} (log: $LOG); the first cold build takes long"
	start=$(date +%s)
	if ! (cd "$wrapper" && GOFLAGS=-mod=readonly "$GO" build -trimpath -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}") >>"$LOG" 2>&1; then
		tail -n 30 "$LOG" >&2
		rm -rf "$tmp"
		log "$name: build FAILED after $(($(date +%s) - start))s"
		return 1
	fi
	log "$name: built in $(($(date +%s) - start))s"
	echo "$name-$k" >"$tmp/.complete"
	chmod 0755 "$tmp"
	if mkdir -p "$CACHE_DIR" 2>/dev/null && rm -rf "$dir.tmp.$$" && cp -a "$tmp" "$dir.tmp.$$" 2>/dev/null &&
		rm -rf "$dir" && mv "$dir.tmp.$$" "$dir"; then
		rm -rf "$tmp"
		# Older builds of the same tool are dead weight (each is ~400 MB).
		find "$CACHE_DIR" -maxdepth 1 -name "$name-*" ! -name "$name-$k" -exec rm -rf {} + 2>/dev/null || true
		echo "$dir"
	else
		rm -rf "$dir.tmp.$$" 2>/dev/null || true
		log "note: could not write cache $dir; using $ROOT/_output/e2e/$name-$k"
		rm -rf "$ROOT/_output/e2e/$name-$k"
		mv "$tmp" "$ROOT/_output/e2e/$name-$k"
		echo "$ROOT/_output/e2e/$name-$k"
	fi
}

# cmdname PKG: the binary name go build gives a main package (etcd's is server/v3 -> "v3"
# would be wrong: go build names it after the last non-version element, "server").
cmdname() {
	case $1 in
	go.etcd.io/etcd/server/v3) echo server ;;
	*) basename "$1" ;;
	esac
}

k8s_pkgs=()
for c in "${K8S_CMDS[@]}"; do k8s_pkgs+=("k8s.io/kubernetes/cmd/$c"); done
k8s_dir=$(ensure "k8s-$K8S_VERSION" "$ROOT/test/e2e/tools/k8s" "$(k8s_ldflags)" "${k8s_pkgs[@]}")
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
