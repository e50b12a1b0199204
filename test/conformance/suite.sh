#!/usr/bin/env bash
# test/conformance/suite.sh — e2e.test against a running cluster, then the summary.
# test/conformance/run.sh calls it once the cluster is up (as test/e2e/run.sh's cluster
# hook without test/cluster).
#
# Environment (run.sh sets the first three):
#   KUBECONFIG            the cluster's admin kubeconfig (required)
#   CONFORMANCE_BIN       directory of e2e.test (test/conformance/tools.sh)
#   CONFORMANCE_OUT       results: junit_01.xml, e2e.log, summary.txt
#   CONFORMANCE_EXCLUDED  exclusion files, space-separated (default test/conformance/excluded)
#   CONFORMANCE_FOCUS     --ginkgo.focus (default '\[Conformance\]|\[NodeConformance\]')
#   CONFORMANCE_SKIP      more of --ginkgo.skip (a regexp), besides the exclusions
#   CONFORMANCE_TIMEOUT   --ginkgo.timeout (default 12h)
#   CONFORMANCE_ARGS      more e2e.test flags
#   CONFORMANCE_SEED      Ginkgo's random seed (the spec order; the same on two runtimes)
#   CONFORMANCE_PROCS     parallel Ginkgo processes (default 8): e2e.test runs under the
#                         Ginkgo CLI (ginkgo -p --procs=N, CONFORMANCE_BIN/ginkgo); the
#                         [Serial] specs (Ginkgo's Serial decorator) run after the others,
#                         alone on process 1; 1 runs e2e.test itself, serially
#   KUBECTL               kubectl for the kubectl specs (default: test/e2e/tools.sh's)
#   KUBE_TEST_REPO_LIST   passed through to e2e.test (not needed: the offline registry's
#                         hosts.toml mirrors serve the images under their public names)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
: "${KUBECONFIG:?KUBECONFIG must name the admin kubeconfig of the cluster}"
OUT=${CONFORMANCE_OUT:-$ROOT/_output/conformance}
BIN=${CONFORMANCE_BIN:-$ROOT/_output/conformance/bin}
FOCUS=${CONFORMANCE_FOCUS:-'\[Conformance\]|\[NodeConformance\]'}
EXCLUDED=${CONFORMANCE_EXCLUDED:-$ROOT/test/conformance/excluded}
KUBECTL=${KUBECTL:-$("$ROOT/test/e2e/tools.sh" 2>/dev/null)/kubectl}
mkdir -p "$OUT"

log() { echo "conformance: $*" >&2; }

# skip_regexp FILE...: the exclusion lists' patterns (text before " #") joined with '|'.
skip_regexp() {
	sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]#.*$//' -e 's/[[:space:]]*$//' "$@" | paste -sd'|'
}

# shellcheck disable=SC2086 # EXCLUDED is a list of files
skip=$(skip_regexp $EXCLUDED)
[ -z "${CONFORMANCE_SKIP:-}" ] || skip=${skip:+$skip|}$CONFORMANCE_SKIP
rm -rf "$OUT/report"
mkdir -p "$OUT/report"
log "focus: $FOCUS"
# shellcheck disable=SC2086
log "skipping $(sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' $EXCLUDED | wc -l) excluded patterns${CONFORMANCE_SKIP:+ and $CONFORMANCE_SKIP}"
start=$(date +%s)
args=(--provider=skeleton --kubeconfig="$KUBECONFIG" --kubectl-path="$KUBECTL"
	--report-dir="$OUT/report" --disable-log-dump)
# Ginkgo's own flags: e2e.test's --ginkgo.X, or the CLI's --X.
gargs=(--focus="$FOCUS" --timeout="${CONFORMANCE_TIMEOUT:-12h}" --no-color --poll-progress-after=5m)
[ -z "$skip" ] || gargs+=(--skip="$skip")
[ -z "${CONFORMANCE_SEED:-}" ] || gargs+=(--seed="$CONFORMANCE_SEED")
procs=${CONFORMANCE_PROCS:-8}
rc=0
if [ "$procs" -gt 1 ]; then
	log "$procs parallel Ginkgo processes ([Serial] specs last, alone)"
	# shellcheck disable=SC2086 # CONFORMANCE_ARGS is a list of flags
	"$BIN/ginkgo" -p --procs="$procs" "${gargs[@]}" "$BIN/e2e.test" -- "${args[@]}" ${CONFORMANCE_ARGS:-} >"$OUT/e2e.log" 2>&1 || rc=$?
else
	# shellcheck disable=SC2086 # CONFORMANCE_ARGS is a list of flags
	"$BIN/e2e.test" "${args[@]}" "${gargs[@]/#--/--ginkgo.}" ${CONFORMANCE_ARGS:-} >"$OUT/e2e.log" 2>&1 || rc=$?
fi
wall=$(($(date +%s) - start))
log "e2e.test exited $rc after ${wall}s (log: $OUT/e2e.log)"
report=$OUT/report/junit_01.xml
[ -f "$report" ] || { tail -n 40 "$OUT/e2e.log" >&2; log "no JUnit report"; exit 1; }
ln -sfn report/junit_01.xml "$OUT/junit.xml"
ex_args=()
for f in $EXCLUDED; do ex_args+=(-excluded "$f"); done
src=0
{
	echo "conformance: focus $FOCUS, wall time ${wall}s, e2e.test exit $rc"
	(cd "$ROOT" && go run ./test/conformance/summary -report "$report" -focus "$FOCUS" "${ex_args[@]}" -v) || src=$?
} >"$OUT/summary.txt" 2>&1
sed -n '1,/^SKIPPED BY THE SUITE:/p' "$OUT/summary.txt" | sed '$d'
log "summary: $OUT/summary.txt"
[ "$src" = 0 ] && [ "$rc" = 0 ]
