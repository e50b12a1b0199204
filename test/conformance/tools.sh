#!/usr/bin/env bash
# test/conformance/tools.sh — the Kubernetes conformance suite (e2e.test) and agnhost, built
# from the Go module proxy through the wrapper module test/e2e/tools/k8s-test (a twin of
# test/e2e/tools/k8s with the suite's test-only dependencies, kept apart so that they do
# not change the kubelet's cache key) and cached like test/e2e/tools.sh's binaries in
# /var/cache/minicri-tools/k8s-test-<version>-<key>/ (key: go.mod, go.sum, link flags, Go
# version; a missing, incomplete or stale entry is rebuilt, an unwritable cache builds into
# _output). The build is heavy (~1.5 GB of packages): it runs under nice.
#
#   test/conformance/tools.sh [DIR]   ensure e2e.test and agnhost; fill DIR (default
#                                     _output/conformance/bin) with e2e.test and the files
#                                     the registry's conformance images need (agnhost,
#                                     porter's certificate, kitten/nautilus pictures:
#                                     test/registry -e2e-images DIR); print DIR
#
# Environment: MINICRI_TOOLS_CACHE (default /var/cache/minicri-tools), GO (default go),
# CONFORMANCE_BUILD_LOG (default _output/conformance/build-tools.log).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K8S_VERSION=v1.37.2
WRAPPER=$ROOT/test/e2e/tools/k8s-test
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
export PATH=$PATH:/usr/local/go/bin
LOG=${CONFORMANCE_BUILD_LOG:-$ROOT/_output/conformance/build-tools.log}
mkdir -p "$(dirname "$LOG")"

log() { echo "conformance-tools: $*" >&2; }

# ldflags: the version stamp of test/e2e/tools.sh (the suite logs it and compares it to
# the server's).
ldflags() {
	local v=${K8S_VERSION#v} p out="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		out+=$(printf -- ' -X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean' \
			"$p" "$K8S_VERSION" "$p" "${v%%.*}" "$p" "$(cut -d. -f2 <<<"$v")" "$p")
	done
	echo "$out"
}

# key: test/e2e/tools.sh's keying (go.mod, go.sum, flags, Go version).
key() {
	{ cat "$WRAPPER/go.mod" "$WRAPPER/go.sum"; echo "$1"; "$GO" env GOVERSION GOARCH; } | sha256sum | cut -c1-12
}

# build TMP LDFLAGS: e2e.test (go test -c of the suite's package) and a static agnhost.
build() {
	(
		cd "$WRAPPER"
		export GOFLAGS=-mod=readonly
		nice -n 10 "$GO" test -c -vet=off -trimpath -ldflags="$2" -o "$1/e2e.test" k8s.io/kubernetes/test/e2e &&
			CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags="$2" -o "$1/agnhost" k8s.io/kubernetes/test/images/agnhost
	) >>"$LOG" 2>&1
}

# ensure: prints the directory holding e2e.test and agnhost.
ensure() {
	local name=k8s-test-$K8S_VERSION ld k dir tmp start
	ld=$(ldflags)
	k=$(key "$ld")
	dir=$CACHE_DIR/$name-$k
	if [ "$(cat "$dir/.complete" 2>/dev/null)" = "$name-$k" ] && [ -x "$dir/e2e.test" ] && [ -x "$dir/agnhost" ]; then
		log "cached in $dir"
		echo "$dir"
		return 0
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/conformance-build.XXXXX")
	log "building e2e.test and agnhost (log: $LOG); the first cold build takes long"
	start=$(date +%s)
	if ! build "$tmp" "$ld"; then
		tail -n 30 "$LOG" >&2
		rm -rf "$tmp"
		log "build FAILED after $(($(date +%s) - start))s"
		return 1
	fi
	log "built in $(($(date +%s) - start))s"
	echo "$name-$k" >"$tmp/.complete"
	chmod 0755 "$tmp"
	if mkdir -p "$CACHE_DIR" 2>/dev/null && rm -rf "$dir.tmp.$$" && cp -a "$tmp" "$dir.tmp.$$" 2>/dev/null &&
		rm -rf "$dir" && mv "$dir.tmp.$$" "$dir"; then
		rm -rf "$tmp"
		# Older builds are dead weight (e2e.test alone is ~150 MB).
		find "$CACHE_DIR" -maxdepth 1 -name "$name-*" ! -name "$name-$k" -exec rm -rf {} + 2>/dev/null || true
		echo "$dir"
	else
		rm -rf "$dir.tmp.$$" 2>/dev/null || true
		log "note: could not write cache $dir; using $ROOT/_output/conformance/$name-$k"
		rm -rf "$ROOT/_output/conformance/$name-$k"
		mv "$tmp" "$ROOT/_output/conformance/$name-$k"
		echo "$ROOT/_output/conformance/$name-$k"
	fi
}

bin=$(ensure)
out=${1:-$ROOT/_output/conformance/bin}
mkdir -p "$out"
ln -sfn "$bin/e2e.test" "$out/e2e.test"
ln -sfn "$bin/agnhost" "$out/agnhost"
src=$(cd "$WRAPPER" && GOFLAGS=-mod=readonly "$GO" list -m -f '{{.Dir}}' k8s.io/kubernetes)
cp -f "$src/test/images/agnhost/porter/localhost.crt" "$src/test/images/agnhost/porter/localhost.key" \
	"$src/test/images/kitten/html/kitten.jpg" "$src/test/images/nautilus/html/nautilus.jpg" "$out/"
chmod u+w "$out"/*.crt "$out"/*.key "$out"/*.jpg
echo "$out"
