#!/usr/bin/env bash
# test/conformance/tools.sh — the Kubernetes conformance suite (e2e.test) and agnhost, built
# from the Go module proxy through the wrapper module test/e2e/tools/k8s-test (a twin of
# test/e2e/tools/k8s with the suite's test-only dependencies, kept apart so that they do
# not change the kubelet's cache key) and cached like test/e2e/tools.sh's binaries in
# /var/cache/minicri-tools/k8s-test-<version>-<key>/ (key: go.mod, go.sum, link flags, Go
# version; a missing, incomplete or stale entry is rebuilt, an unwritable cache builds into
# _output). The build is heavy (~1.5 GB of packages): it runs under nice.
#
#   test/conformance/tools.sh [DIR]   ensure e2e.test, agnhost and the Ginkgo CLI; fill DIR (default
#                                     _output/conformance/bin) with e2e.test, ginkgo and the files
#                                     the registry's conformance images need (agnhost,
#                                     porter's certificate, kitten/nautilus pictures:
#                                     test/registry -e2e-images DIR); print DIR
#
# Environment: K8S_VERSION (default: the version test/e2e/tools/k8s-test/go.mod requires),
# MINICRI_TOOLS_CACHE (default /var/cache/minicri-tools), GO (default go),
# CONFORMANCE_BUILD_LOG (default _output/conformance/build-tools.log).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
LOG=${CONFORMANCE_BUILD_LOG:-$ROOT/_output/conformance/build-tools.log}
mkdir -p "$(dirname "$LOG")"

# shellcheck source=test/e2e/toolslib.sh disable=SC1091
. "$ROOT/test/e2e/toolslib.sh"
log() { echo "conformance-tools: $*" >&2; }
# The suite's version: test/e2e/tools/k8s-test's (the default, that of test/e2e/tools.sh's
# binaries), or K8S_VERSION's own wrapper test/e2e/tools/k8s-test-<version> (none is kept).
WRAPPER=$(k8s_wrapper k8s-test)
K8S_VERSION=$(required_version "$WRAPPER" k8s.io/kubernetes)

# ldflags: the version stamp of test/e2e/tools.sh (the suite logs it and compares it to
# the server's); toolslib's ensure_with adds "-s -w".
ldflags() {
	local v=${K8S_VERSION#v} p out=""
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		out+=$(printf -- ' -X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean' \
			"$p" "$K8S_VERSION" "$p" "${v%%.*}" "$p" "$(cut -d. -f2 <<<"$v")" "$p")
	done
	echo "${out# }"
}

# The suite: e2e.test of k8s.io/kubernetes/test/e2e (every spec), or with
# CONFORMANCE_SUBSET=ci the wrapper's cisuite (only the spec packages of the CI subset:
# about a third of the compile; test/conformance/run.sh checks that it holds every spec
# of test/conformance/ci-specs).
SUITE_PKG=k8s.io/kubernetes/test/e2e
SUITE_NAME=k8s-test-$K8S_VERSION
SUITE_KEY=
if [ "${CONFORMANCE_SUBSET:-}" = ci ]; then
	SUITE_PKG=minicri.local/e2e/k8s-test/cisuite
	SUITE_NAME=k8s-test-ci-$K8S_VERSION
	SUITE_KEY=$(sha256sum "$WRAPPER/cisuite/cisuite_test.go" | cut -c1-12)
fi

# build_suite TMP LDFLAGS: e2e.test (go test -c of the suite's package) and a static agnhost.
build_suite() {
	nice -n 10 "$GO" test -c -vet=off -trimpath -ldflags="$2" -o "$1/e2e.test" "$SUITE_PKG" &&
		CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags="$2" -o "$1/agnhost" k8s.io/kubernetes/test/images/agnhost
}

# The cache key hashes the wrapper's go.mod/go.sum and the flags, and here the cisuite's source.
bin=$(TOOLS_KEY_EXTRA=$SUITE_KEY ensure_with build_suite "$SUITE_NAME" "$WRAPPER" "$(ldflags)" e2e.test agnhost)
# The Ginkgo CLI at the version the suite pins, to run e2e.test's specs in parallel
# (suite.sh, CONFORMANCE_PROCS).
ginkgo_version=$(cd "$WRAPPER" && GOFLAGS=-mod=readonly "$GO" list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
ginkgo_dir=$(ensure "ginkgo-$ginkgo_version" "$WRAPPER" "" github.com/onsi/ginkgo/v2/ginkgo)
out=${1:-$ROOT/_output/conformance/bin}
mkdir -p "$out"
ln -sfn "$bin/e2e.test" "$out/e2e.test"
ln -sfn "$ginkgo_dir/ginkgo" "$out/ginkgo"
ln -sfn "$bin/agnhost" "$out/agnhost"
src=$(cd "$WRAPPER" && GOFLAGS=-mod=readonly "$GO" list -m -f '{{.Dir}}' k8s.io/kubernetes)
cp -f "$src/test/images/agnhost/porter/localhost.crt" "$src/test/images/agnhost/porter/localhost.key" \
	"$src/test/images/kitten/html/kitten.jpg" "$src/test/images/nautilus/html/nautilus.jpg" "$out/"
chmod u+w "$out"/*.crt "$out"/*.key "$out"/*.jpg
echo "$out"
