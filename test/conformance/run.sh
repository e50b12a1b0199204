#!/usr/bin/env bash
# test/conformance/run.sh — the Kubernetes conformance suite (e2e.test v1.38.0-beta.0, the
# [Conformance] and [NodeConformance] specs) against a cluster whose nodes run minicri,
# offline (`make conformance`).
#
#   1. test/conformance/tools.sh: e2e.test and agnhost (built once, cached).
#   2. The cluster: test/cluster/up.sh (several nodes, kube-proxy, CoreDNS;
#      CLUSTER_RUNTIME=minicri|containerd), stopped by test/cluster/down.sh; without
#      test/cluster, test/e2e/run.sh's single-node cluster mode (no kube-proxy, no
#      cluster DNS: test/conformance/excluded-single-node is added to the exclusions).
#      Either way the offline registry (test/registry) also serves the suite's images
#      (INSTANCE_REGISTRY_ARGS=-e2e-images), under their public names through the
#      registry mirrors.
#   3. test/conformance/suite.sh: e2e.test --provider=skeleton with the focus and the
#      exclusions (test/conformance/excluded: spec -> why), the JUnit report and
#      summary.txt (passed, failed, skipped, excluded) in CONFORMANCE_OUT.
#
# Environment: CLUSTER_OUT (test/cluster's, default _output/cluster: one cluster per
# directory, so two runs side by side need two), CONFORMANCE_CLUSTER (auto: test/cluster if present, else e2e; or
# cluster|e2e), CONFORMANCE_OUT (default _output/conformance[-<runtime>]), CLUSTER_RUNTIME,
# INSTANCE_LAZY=1 (lazy pulls on, the registry's images eStargz: `make conformance-ci LAZY=1`),
# CONFORMANCE_SUBSET=ci (the CI subset, `make conformance-ci`: the [NodeConformance] specs
# and the Services/DNS [Conformance] specs, without [Slow] and [Serial]; README.md), and
# suite.sh's (CONFORMANCE_FOCUS, CONFORMANCE_SKIP, CONFORMANCE_TIMEOUT, ...).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
DIR=$ROOT/test/conformance
MODE=${CONFORMANCE_CLUSTER:-auto}
case ${CONFORMANCE_SUBSET:-} in
"") ;;
ci)
	# shellcheck source=test/conformance/ci-focus.sh
	. "$ROOT/test/conformance/ci-focus.sh"
	export CONFORMANCE_FOCUS=${CONFORMANCE_FOCUS:-$CI_FOCUS}
	export CONFORMANCE_SKIP=${CONFORMANCE_SKIP:-$CI_SKIP}
	# 12 processes: the subset's time is the probe specs waiting out their periods (twelve
	# of ~243 s each): 733 s of wall time against 964 s with 8 (README.md).
	export CONFORMANCE_PROCS=${CONFORMANCE_PROCS:-12}
	;;
*) echo "conformance: CONFORMANCE_SUBSET=$CONFORMANCE_SUBSET: want ci or empty" >&2; exit 2 ;;
esac
if [ "$MODE" = auto ]; then
	MODE=e2e
	[ ! -x "$ROOT/test/cluster/up.sh" ] || MODE=cluster
fi
suffix=
[ "$MODE" != cluster ] || [ "${CLUSTER_RUNTIME:-minicri}" = minicri ] || suffix=-$CLUSTER_RUNTIME
export CONFORMANCE_OUT=${CONFORMANCE_OUT:-$ROOT/_output/conformance$suffix}
mkdir -p "$CONFORMANCE_OUT"

log() { echo "conformance: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
t0=$(date +%s)
CONFORMANCE_BIN=$("$DIR/tools.sh" "$ROOT/_output/conformance/bin")
export CONFORMANCE_BIN
log "e2e.test and agnhost ready in $(($(date +%s) - t0))s"
if [ "${CONFORMANCE_SUBSET:-}" = ci ] && [ "$CONFORMANCE_FOCUS" = "$CI_FOCUS" ] && [ "$CONFORMANCE_SKIP" = "$CI_SKIP" ]; then
	# The CI subset's suite (tools.sh's cisuite) must hold every spec the full suite runs
	# for this focus and skip: test/conformance/ci-specs (regenerate it from the full
	# suite's dry run after a Kubernetes bump: test/conformance/README.md).
	"$CONFORMANCE_BIN/e2e.test" --provider=skeleton --ginkgo.dry-run --ginkgo.focus="$CONFORMANCE_FOCUS" \
		--ginkgo.skip="$CONFORMANCE_SKIP" --ginkgo.junit-report="$CONFORMANCE_OUT/dry-run.xml" >"$CONFORMANCE_OUT/dry-run.log" 2>&1 ||
		{ tail -n 20 "$CONFORMANCE_OUT/dry-run.log" >&2; log "the CI suite's dry run failed"; exit 1; }
	go run ./test/conformance/summary -report "$CONFORMANCE_OUT/dry-run.xml" -focus "$CONFORMANCE_FOCUS" -list >"$CONFORMANCE_OUT/ci-specs"
	if ! diff -u "$DIR/ci-specs" "$CONFORMANCE_OUT/ci-specs" >"$CONFORMANCE_OUT/ci-specs.diff"; then
		head -n 20 "$CONFORMANCE_OUT/ci-specs.diff" >&2
		log "the CI suite's specs differ from test/conformance/ci-specs ($CONFORMANCE_OUT/ci-specs.diff)"
		exit 1
	fi
	log "the CI suite holds the $(wc -l <"$DIR/ci-specs") specs of test/conformance/ci-specs"
fi
# The registry of every minicri instance the cluster starts also serves the suite's images.
export INSTANCE_REGISTRY_ARGS="-e2e-images $CONFORMANCE_BIN"
export KUBECTL=${KUBECTL:-$("$ROOT/test/e2e/tools.sh")/kubectl}

case $MODE in
cluster)
	export CONFORMANCE_EXCLUDED="${CONFORMANCE_EXCLUDED:-$DIR/excluded}"
	down() {
		local rc=$?
		"$ROOT/test/cluster/down.sh" || log "test/cluster/down.sh failed"
		# With lazy pulls on (INSTANCE_LAZY=1), every node's minicri must have mounted
		# layers lazily and pulled none of the eStargz ones whole (hack/instance.sh).
		if [ "${INSTANCE_LAZY:-}" = 1 ]; then
			# shellcheck source=hack/instance.sh disable=SC1091
			. "$ROOT/hack/instance.sh"
			instance_lazy_check $(seq -f "${CLUSTER_OUT:-$ROOT/_output/cluster}/logs/minicri-node-%g/minicri.log" 1 "${CLUSTER_NODES:-2}") ||
				{ log "FAIL: lazy pulls not taken on every node (see above)"; rc=1; }
		fi
		exit $rc
	}
	trap down EXIT
	log "cluster: test/cluster/up.sh (CLUSTER_RUNTIME=${CLUSTER_RUNTIME:-minicri})"
	"$ROOT/test/cluster/up.sh"
	KUBECONFIG=${CLUSTER_OUT:-$ROOT/_output/cluster}/kubeconfig "$DIR/suite.sh"
	;;
e2e)
	export CONFORMANCE_EXCLUDED="${CONFORMANCE_EXCLUDED:-$DIR/excluded $DIR/excluded-single-node}"
	log "cluster: test/e2e/run.sh's single-node cluster mode (no test/cluster)"
	[ -x "$ROOT/bin/minicri" ] || make build
	E2E_MODES=cluster E2E_CLUSTER_HOOK=$DIR/suite.sh E2E_OUT=$CONFORMANCE_OUT/e2e "$ROOT/test/e2e/run.sh"
	;;
*)
	log "CONFORMANCE_CLUSTER=$MODE: want auto, cluster or e2e"
	exit 2
	;;
esac
