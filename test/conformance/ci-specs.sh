#!/usr/bin/env bash
# test/conformance/ci-specs.sh — writes test/conformance/ci-specs: the specs the full
# conformance suite (e2e.test of k8s.io/kubernetes/test/e2e) runs for the CI subset's focus
# and skip, from its dry run. `make conformance-ci` checks that its own, smaller suite
# binary (test/e2e/tools/k8s-test/cisuite) holds exactly these.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
# shellcheck source=test/conformance/ci-focus.sh
. "$ROOT/test/conformance/ci-focus.sh"
bin=$(CONFORMANCE_SUBSET= test/conformance/tools.sh "$ROOT/_output/conformance/bin-full")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/e2e.test" --provider=skeleton --ginkgo.dry-run --ginkgo.focus="$CI_FOCUS" --ginkgo.skip="$CI_SKIP" \
	--ginkgo.junit-report="$tmp/dry-run.xml" >"$tmp/dry-run.log" 2>&1 || { tail -n 20 "$tmp/dry-run.log" >&2; exit 1; }
go run ./test/conformance/summary -report "$tmp/dry-run.xml" -focus "$CI_FOCUS" -list >test/conformance/ci-specs
echo "test/conformance/ci-specs: $(wc -l <test/conformance/ci-specs) specs"
