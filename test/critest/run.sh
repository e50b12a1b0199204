#!/usr/bin/env bash
# test/critest/run.sh — critest v1.37.0 against a private minicri instance (`make critest`).
#
# Gate: every spec in test/critest/must-pass must pass. Other failures are reported, not fatal.
# Environment:
#   CRITEST_FOCUS    regexp passed as -ginkgo.focus (must-pass specs outside it are "not run")
#   CRITEST_SKIP     regexp passed as -ginkgo.skip
#   CRITEST_ARGS     extra critest flags (word-split)
#   CRITEST_RUNTIME_HANDLER  run every pod on this RuntimeClass handler: minicri gets a
#                    [runtimes.<name>] table for the binary CRITEST_RUNTIME_PATH (default:
#                    the <name> on PATH or in /usr/sbin, e.g. Debian's runc) and critest
#                    -runtime-handler <name>
#   CRITEST_TIMEOUT  whole-suite Ginkgo timeout (default 40m)
#   CRITEST_OUT      output dir (default _output/critest): junit.xml, critest.log, minicri.log
#   CRITEST_MUST_PASS  the gate's spec list (default test/critest/must-pass; the VM lab's:
#                    test/critest/must-pass-vm)
#   CRITEST_JUNIT_SUMMARY  a prebuilt test/critest/junit binary (default: built here into
#                    CRITEST_OUT; the VM lab builds it on the host: the guest compiles ~30x slower)
#   MINICRI, CRICTL, INSTANCE_REGISTRY_BIN  binaries to use (hack/instance.sh)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"

OUT=${CRITEST_OUT:-$ROOT/_output/critest}
CRITEST=${CRITEST:-$ROOT/_output/tools/critest}
CRITEST_TIMEOUT=${CRITEST_TIMEOUT:-40m}
MUST_PASS=${CRITEST_MUST_PASS:-$ROOT/test/critest/must-pass}
EXPECTED=$ROOT/test/critest/expected-failures

[ "$(id -u)" = 0 ] || { echo "critest: needs root" >&2; exit 1; }
[ -x "$CRITEST" ] || { echo "critest: $CRITEST missing: run make deps" >&2; exit 1; }
mkdir -p "$OUT"
rm -f "$OUT/junit.xml" "$OUT/critest.log" "$OUT/minicri.log"
JUNIT_SUMMARY=${CRITEST_JUNIT_SUMMARY:-$OUT/junit-summary}
[ -n "${CRITEST_JUNIT_SUMMARY:-}" ] || go build -o "$JUNIT_SUMMARY" ./test/critest/junit

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=test/critest/metrics.sh disable=SC1091
. "$ROOT/test/critest/metrics.sh"
export INSTANCE_ARTIFACTS=$OUT

on_exit() {
	local rc=$?
	instance_stop || { echo "critest: FAIL: minicri did not stop cleanly or left something behind" >&2; rc=1; }
	[ $rc -eq 0 ] || echo "critest: FAIL (exit $rc); logs in $OUT" >&2
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${CRITEST_RUNTIME_HANDLER:-}" ]; then
	rt_path=${CRITEST_RUNTIME_PATH:-$(PATH=$PATH:/usr/sbin command -v "$CRITEST_RUNTIME_HANDLER" || true)}
	[ -x "$rt_path" ] || { echo "critest: no binary for runtime handler $CRITEST_RUNTIME_HANDLER (set CRITEST_RUNTIME_PATH)" >&2; exit 1; }
	export INSTANCE_CONFIG_EXTRA="[runtimes.$CRITEST_RUNTIME_HANDLER]
path = \"$rt_path\""
fi
# The metrics endpoint, checked after the suite (test/critest/metrics.sh).
export INSTANCE_CONFIG_EXTRA="${INSTANCE_CONFIG_EXTRA:-}
$(critest_metrics_config)"

# critest pulls its images by their public names; the offline registry serves them.
# CRITEST_BRIDGE/CRITEST_SUBNET let two runs share a machine: the bridge names the
# instance too (its cgroup parent, which instance_stop empties: never another run's).
INSTANCE_REGISTRY=test instance_start "critest${CRITEST_BRIDGE:+-$CRITEST_BRIDGE}" "${CRITEST_BRIDGE:-mcri-ct0}" "${CRITEST_SUBNET:-10.199.0.0/16}" ct

args=(
	--runtime-endpoint "$INSTANCE_ENDPOINT"
	--image-endpoint "$INSTANCE_ENDPOINT"
	--nri-socket "$INSTANCE_NRI_SOCK"
	--ginkgo.junit-report "$OUT/junit.xml"
	--ginkgo.timeout "$CRITEST_TIMEOUT"
)
[ -t 1 ] || args+=(--ginkgo.no-color)
[ -z "${CRITEST_FOCUS:-}" ] || args+=(--ginkgo.focus "$CRITEST_FOCUS")
[ -z "${CRITEST_SKIP:-}" ] || args+=(--ginkgo.skip "$CRITEST_SKIP")
[ -z "${CRITEST_RUNTIME_HANDLER:-}" ] || args+=(--runtime-handler "$CRITEST_RUNTIME_HANDLER")
# shellcheck disable=SC2206
[ -z "${CRITEST_ARGS:-}" ] || args+=($CRITEST_ARGS)

echo "critest: $CRITEST ${args[*]}"
start=$(date +%s)
set +e
# The full output goes to critest.log; the terminal gets it without the indented
# failure details (the summary below repeats the must-pass failures with their message).
instance_run "$CRITEST" "${args[@]}" > >(tee "$OUT/critest.log" |
	grep --line-buffered -v -e '^[[:space:]]' -e '^------------------------------$') 2>&1
critest_rc=$?
set -e
echo "critest: finished in $(($(date +%s) - start))s (exit $critest_rc; non-zero whenever any spec fails)"
metrics_rc=0
critest_metrics_check "$OUT" || metrics_rc=1

[ -s "$OUT/junit.xml" ] || { echo "critest: FAIL: no JUnit report $OUT/junit.xml" >&2; exit 1; }
summary=(-report "$OUT/junit.xml" -must-pass "$MUST_PASS")
[ ! -f "$EXPECTED" ] || summary+=(-expected-failures "$EXPECTED")
# A handler run skips what the handler lacks (runc 1.1: user namespaces): skipped
# must-pass specs are no failure then, failed ones still are.
[ -z "${CRITEST_FOCUS:-}${CRITEST_SKIP:-}${CRITEST_RUNTIME_HANDLER:-}" ] || summary+=(-partial)
"$JUNIT_SUMMARY" "${summary[@]}"
[ "$metrics_rc" = 0 ] || { echo "critest: FAIL: the metrics endpoint lacks CRI methods the suite called (see above)" >&2; exit 1; }
