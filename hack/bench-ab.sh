#!/usr/bin/env bash
# hack/bench-ab.sh REV [ROUNDS] — `make bench-ab BENCH_AB_REV=REV`: minicri at REV against
# minicri as built now (bin/), in one run: the pods section of `make bench` (sequential pod
# lifecycles timed per CRI step, parallel pods, memory), ROUNDS times each (default 3),
# alternating old and new so that a drift of the machine hits both. REV is built in a
# temporary git worktree (its bin/ only). Prints one `cribench report` table per round
# (ratios new/old: below 1 means the build of now is faster or smaller); results in
# _output/bench-ab/. For "no change of behaviour" refactors: within noise is a ratio
# whose rounds straddle 1.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REV=${1:?usage: hack/bench-ab.sh REV [ROUNDS]}
ROUNDS=${2:-3}
OUT=$ROOT/_output/bench-ab
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.36.1-1
MC_BRIDGE=mcri-ab0 MC_SUBNET=10.196.0.0/16
CRIBENCH=$OUT/bin/cribench

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"

log() { echo "bench-ab: $*" >&2; }

old=$(git -C "$ROOT" rev-parse --short "$REV")
wt=$(mktemp -d /tmp/minicri-ab-XXXXXX)
cleanup() {
	instance_stop 2>/dev/null || true
	git -C "$ROOT" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/old" "$OUT/new"
log "building $old in $wt"
git -C "$ROOT" worktree add -q --detach "$wt" "$old"
make -C "$wt" --no-print-directory build >"$OUT/build-old.log" 2>&1 || { log "build of $old failed: $OUT/build-old.log"; exit 1; }
cp "$wt"/bin/* "$OUT/old/"
# Both builds run from fresh copies: a binary that has been mapped for long (bin/minicri,
# by every earlier instance) can have its text in huge pages, which alone read as ~4 MiB
# more PSS (measured: HEAD against itself, 1.12 before this copy).
cp "$ROOT"/bin/* "$OUT/new/"
(cd "$ROOT" && go build -o "$CRIBENCH" ./test/bench/cribench && go build -o "$ROOT/_output/bin/registry" ./test/registry)

# one NAME BINARY RESULTS: a fresh instance of BINARY, cribench pods against it.
one() {
	local name=$1 bin=$2 res=$3 metrics= i
	MINICRI=$bin INSTANCE_REGISTRY=test instance_start ab "$MC_BRIDGE" "$MC_SUBNET" ab
	for ((i = 0; i < 50; i++)); do
		metrics=$(sed -n 's|.*"msg":"metrics serving","address":"\([^"]*\)".*|http://\1/metrics|p' "$INSTANCE_LOG" | tail -n 1)
		[ -z "$metrics" ] || break
		sleep 0.1
	done
	instance_run "$CRIBENCH" pods -endpoint "$INSTANCE_ENDPOINT" -runtime "$name" -image "$IMAGE" \
		-cgroup-parent "$INSTANCE_CGROUP" -mem-pid "$INSTANCE_PID" -mem-match "$INSTANCE_TMP/state" \
		${metrics:+-metrics "$metrics"} -out "$res/pods-$name.json"
	instance_stop
}

for ((r = 1; r <= ROUNDS; r++)); do
	res=$OUT/round-$r
	mkdir -p "$res"
	if ((r % 2)); then order=(old new); else order=(new old); fi
	for which in "${order[@]}"; do
		log "round $r/$ROUNDS: $which"
		if [ "$which" = old ]; then one "minicri-$old" "$OUT/old/minicri" "$res"; else one minicri "$OUT/new/minicri" "$res"; fi
	done
	echo "== round $r/$ROUNDS: minicri (now) against minicri-$old"
	"$CRIBENCH" report -dir "$res" -runtimes "minicri,minicri-$old" | tee "$res/report.txt"
done
